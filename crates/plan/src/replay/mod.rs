//! A replay: a sessions file streamed as the steps the engine fires.
//!
//! The file is a time-ordered stream of requests tagged with their session
//! ([`crate::sessions`]). A replay reads it once per pass (`loop`), keeps the
//! sessions it fires (`replay_skip`/`replay_offset`, then the shard's), scales
//! each offset by 1/`replay_speed` into a due time, stops after `ammo_limit`
//! requests, and hands out [`Step`]s: a session begins, one of its requests,
//! it ends. Memory follows the capture's concurrency (the sessions open at
//! once), never its length.
//!
//! Sessions are numbered in the order they begin ([`SessionKey`]), pass after
//! pass; the selection (skip, offset, shard) is by that number within a pass,
//! so every pass fires the same sessions and a session is never split: all
//! of its requests go to the one shard that owns it, in order.

mod stats;

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use tank_config::{Autocases, Replay, ReplayConnections};

use crate::error::{PlanError, Result};
use crate::marker::Marker;
use crate::sessions::{Record, SessionsReader};
use crate::shard::Shard;
use crate::words::count;

pub use stats::CaptureStats;
pub(crate) use stats::FirstPass;
pub use stats::{RateProfile, Selection};

/// A session of the replay: its number in the plan, unique across passes
/// (pass × sessions per pass + its index in the pass).
pub type SessionKey = u64;

/// One step of a replay, in due order (a session's `Begin` before its
/// requests, its `End` after them).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step<'a> {
    /// A session begins: it needs a connection of its own once `due`.
    Begin {
        /// The session.
        session: SessionKey,
        /// Its first request's due time, from the start.
        due: Duration,
    },
    /// A request of `session`, to fire at `due` once the session's previous
    /// one has its reply.
    Request {
        /// The session it belongs to.
        session: SessionKey,
        /// The request's index in the whole plan (all shards), from 0.
        seq: u64,
        /// When it is due, from the start: its offset ÷ `replay_speed`.
        due: Duration,
        /// Its tag.
        tag: &'a [u8],
        /// Its bytes, verbatim.
        bytes: &'a [u8],
    },
    /// `session` has no more requests: its connection closes once its last
    /// reply is in.
    End {
        /// The session.
        session: SessionKey,
    },
}

/// A capture offset scaled by `speed`: `offset_us / speed`, in ns, rounded.
pub fn scaled(offset_us: u64, speed: f64) -> Duration {
    if speed == 1.0 {
        return Duration::from_micros(offset_us);
    }
    let nanos = (offset_us as f64 * 1000.0 / speed).round();
    // f64 → u64 saturates; a replay that long is never reached.
    Duration::from_nanos(nanos as u64)
}

/// What a replay fires and how much of it: the parts of the config the
/// stream needs, resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ReplaySettings {
    /// The time scale and the selection.
    pub replay: Replay,
    /// The shard's slice.
    pub shard: Shard,
    /// Passes over the capture (`None`: endless, `loop = 0`).
    pub passes: Option<u64>,
    /// Requests of the whole plan at most (`ammo_limit`).
    pub limit: Option<u64>,
    /// How far a pass is from the one before, µs of the capture.
    pub period_us: u64,
    /// Sessions per pass (requests, with `per_request`): numbers keys.
    pub per_pass: u64,
    /// `autocases` and `enum_ammo`: when either is set, a request's tag is
    /// its marker, computed from its bytes, instead of the file's tag.
    pub marking: (Autocases, bool),
}

impl ReplaySettings {
    /// A replay that would fire nothing is refused: a sessions file without a
    /// request (an import that found none, see its warnings), or a selection
    /// (`replay_skip`/`replay_offset`, the shard) that keeps none of its sessions.
    pub(crate) fn check_fires(&self, path: &Path, stats: &CaptureStats) -> Result<()> {
        let error = |message: String| {
            Err(PlanError::Ammo {
                path: path.to_path_buf(),
                offset: 0,
                message,
            })
        };
        if stats.requests == 0 {
            return error(format!(
                "the sessions file has no request ({}): nothing to replay; expected one that \
                 `tank import` wrote from a capture with requests (its warnings say what it skipped)",
                count(stats.sessions, "session")
            ));
        }
        if stats.requests_selected > 0 {
            return Ok(());
        }
        let replay = &self.replay;
        let mut chosen = Vec::new();
        if replay.skip > 1 {
            chosen.push(format!(
                "replay_skip = {}, replay_offset = {}",
                replay.skip, replay.offset
            ));
        }
        if !self.shard.is_whole() {
            chosen.push(format!("shard {}", self.shard));
        }
        let unit = if self.selection().per_request {
            count(stats.requests, "request")
        } else {
            count(stats.sessions, "session")
        };
        error(format!(
            "{} select none of its {unit}: nothing to replay; expected fewer shards or a smaller replay_skip",
            if chosen.is_empty() {
                "the selection".to_string()
            } else {
                chosen.join(" and ")
            }
        ))
    }

    /// The selection these settings make of one pass.
    pub(crate) fn selection(&self) -> Selection {
        Selection {
            skip: self.replay.skip,
            offset: self.replay.offset,
            shard: self.shard,
            per_request: self.replay.connections == ReplayConnections::PerRequest,
        }
    }
}

/// A step held until the one before it is handed out.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Begin {
        session: SessionKey,
        due: Duration,
    },
    /// The request whose bytes are in the stream's buffers.
    Request {
        session: SessionKey,
        seq: u64,
        due: Duration,
    },
    End {
        session: SessionKey,
    },
}

/// A session open in the file and chosen by the selection.
#[derive(Debug, Clone, Copy)]
struct Open {
    session: SessionKey,
    /// This shard's (else only its requests are counted, for `ammo_limit`).
    owned: bool,
}

/// The steps of a replay, streamed from its sessions file.
pub(crate) struct ReplayStream {
    reader: SessionsReader,
    settings: ReplaySettings,
    pass: u64,
    /// Sessions begun in this pass (requests, with `per_request`).
    begun: u64,
    /// The selected sessions open in the file, by their id there (looked up
    /// per request; the ids are the file's own, so a fast hasher is safe).
    open: foldhash::HashMap<u64, Open>,
    /// Requests of the whole plan so far (every shard's).
    requests: u64,
    pending: VecDeque<Pending>,
    tag: Vec<u8>,
    bytes: Vec<u8>,
    /// The last request handed out: its index in the plan and due time.
    last: Option<(u64, Duration)>,
    /// Tags from `autocases` / `enum_ammo`, when set.
    marker: Option<Marker>,
    done: bool,
}

impl ReplayStream {
    /// Stream `path` under `settings`.
    pub(crate) fn open(path: &Path, settings: ReplaySettings) -> Result<ReplayStream> {
        Ok(ReplayStream {
            reader: SessionsReader::open(path)?,
            settings,
            pass: 0,
            begun: 0,
            open: foldhash::HashMap::default(),
            requests: 0,
            pending: VecDeque::new(),
            tag: Vec::new(),
            bytes: Vec::new(),
            last: None,
            marker: match settings.marking {
                (Autocases::Off, false) => None,
                (autocases, enumerate) => Some(Marker::new(autocases, enumerate)),
            },
            done: false,
        })
    }

    /// Passes over the capture finished so far.
    pub(crate) fn passes(&self) -> u64 {
        self.pass
    }

    /// The next step, or `None` at the replay's end.
    pub(crate) fn next_step(&mut self) -> Result<Option<Step<'_>>> {
        loop {
            if let Some(pending) = self.pending.pop_front() {
                return Ok(Some(match pending {
                    Pending::Begin { session, due } => Step::Begin { session, due },
                    Pending::Request { session, seq, due } => Step::Request {
                        session: {
                            self.last = Some((seq, due));
                            session
                        },
                        seq,
                        due,
                        tag: &self.tag,
                        bytes: &self.bytes,
                    },
                    Pending::End { session } => Step::End { session },
                }));
            }
            if self.done {
                return Ok(None);
            }
            self.advance()?;
        }
    }

    /// The last request handed out by [`Self::next_step`]: its index in the
    /// plan, due time, tag and bytes.
    pub(crate) fn last_request(&self) -> Option<(u64, Duration, &[u8], &[u8])> {
        self.last
            .map(|(seq, due)| (seq, due, self.tag.as_slice(), self.bytes.as_slice()))
    }

    fn due(&self, offset_us: u64) -> Duration {
        let shifted = self
            .pass
            .saturating_mul(self.settings.period_us)
            .saturating_add(offset_us);
        scaled(shifted, self.settings.replay.speed)
    }

    /// Read one record; queue the steps it makes.
    fn advance(&mut self) -> Result<()> {
        if self
            .settings
            .limit
            .is_some_and(|limit| self.requests >= limit)
        {
            self.end_open();
            self.done = true;
            return Ok(());
        }
        let selection = self.settings.selection();
        let key = self.pass.saturating_mul(self.settings.per_pass);
        // A request fired: its bytes are taken from the reader once it lets go of them.
        let mut fired = false;
        match self.reader.next_record()? {
            None => {
                self.end_open();
                self.pass += 1;
                if self
                    .settings
                    .passes
                    .is_some_and(|passes| self.pass >= passes)
                    || self.begun == 0
                {
                    self.done = true;
                } else {
                    self.reader.rewind()?;
                    self.begun = 0;
                }
            }
            Some(Record::Begin { id, offset_us, .. }) if !selection.per_request => {
                let index = self.begun;
                self.begun += 1;
                if let Some(owned) = selection.owns(index) {
                    let session = key.saturating_add(index);
                    self.open.insert(id, Open { session, owned });
                    if owned {
                        let due = self.due(offset_us);
                        self.pending.push_back(Pending::Begin { session, due });
                    }
                }
            }
            Some(Record::Request {
                id,
                offset_us,
                tag,
                bytes,
            }) => {
                let open = if selection.per_request {
                    let index = self.begun;
                    self.begun += 1;
                    selection.owns(index).map(|owned| Open {
                        session: key.saturating_add(index),
                        owned,
                    })
                } else {
                    self.open.get(&id).copied()
                };
                let Some(open) = open else { return Ok(()) };
                let seq = self.requests;
                self.requests += 1;
                if open.owned {
                    match &mut self.marker {
                        Some(marker) => marker
                            .mark(bytes, &mut self.tag)
                            .map_err(PlanError::Config)?,
                        None => {
                            self.tag.clear();
                            self.tag.extend_from_slice(tag);
                        }
                    }
                    fired = true;
                    let (session, due) = (open.session, self.due(offset_us));
                    if selection.per_request {
                        self.pending.push_back(Pending::Begin { session, due });
                    }
                    self.pending
                        .push_back(Pending::Request { session, seq, due });
                    if selection.per_request {
                        self.pending.push_back(Pending::End { session });
                    }
                }
            }
            Some(Record::End { id, .. }) => {
                if let Some(open) = self.open.remove(&id).filter(|open| open.owned) {
                    self.pending.push_back(Pending::End {
                        session: open.session,
                    });
                }
            }
            // per_request: the captured sessions' bounds do not matter.
            Some(Record::Begin { .. }) => {}
        }
        if fired {
            self.reader.swap_request_bytes(&mut self.bytes);
        }
        Ok(())
    }

    /// End the sessions still open (the file or the limit ended), in order.
    fn end_open(&mut self) {
        let mut open: Vec<Open> = self.open.drain().map(|(_, open)| open).collect();
        open.sort_unstable_by_key(|open| open.session);
        self.pending.extend(
            open.into_iter()
                .filter(|open| open.owned)
                .map(|open| Pending::End {
                    session: open.session,
                }),
        );
    }
}

#[cfg(test)]
mod tests;
