//! Captures given to a replay: a queue with `ammo_type = sessions` whose
//! `ammofile` is a pcap, an access log or a HAR rather than a sessions file
//! is imported (as `tank import` would, with the queue's `headers` for an
//! access log) into a temporary sessions file before anything else reads the
//! config, so the plan, the checks and the engine see only sessions files.

use std::sync::mpsc;

use tank_config::{AmmoSource, AmmoType, TestConfig};
use tank_import::on_the_fly::{import_capture, Imported};
use tank_import::Warnings;

use crate::observer::Notice;
use crate::RunError;

/// How many of one import's warnings are shown (the rest are counted).
const SHOWN_WARNINGS: u64 = 20;

/// A config whose captures were imported, and the sessions files it now
/// names (removed when this is dropped).
#[derive(Debug)]
pub struct Captures {
    config: TestConfig,
    _files: Vec<Imported>,
}

impl Captures {
    /// The config, each imported capture replaced by its sessions file.
    pub fn config(&self) -> &TestConfig {
        &self.config
    }
}

/// Import every replay queue's capture; `None` when no queue names one.
/// Each import's summary is an [`Notice::Info`] and each of its warnings a
/// [`Notice::Warning`]; a capture that cannot be read is an error located at
/// the queue's `ammofile`.
pub fn import_captures(
    config: &TestConfig,
    notify: &mut dyn FnMut(Notice<'_>),
) -> Result<Option<Captures>, RunError> {
    let mut imported: Option<Captures> = None;
    for (index, queue) in config.queues.iter().enumerate() {
        let Some(AmmoSource::File {
            path,
            ammo_type: AmmoType::Sessions,
        }) = &queue.ammo
        else {
            continue;
        };
        let (tx, rx) = mpsc::channel();
        let mut warnings = Warnings::new(
            SHOWN_WARNINGS,
            Box::new(move |warning| {
                // The receiver outlives the import.
                let _ = tx.send(warning.to_owned());
            }),
        );
        let result = import_capture(path, queue, &mut warnings);
        drop(warnings);
        for warning in rx {
            notify(Notice::Warning(&format!(
                "[{}] ammofile {}: {warning}",
                queue.name,
                path.display()
            )));
        }
        let file = match result {
            Ok(Some(file)) => file,
            Ok(None) => {
                if !queue.headers.is_empty() {
                    notify(Notice::Warning(&format!(
                        "[{}] `headers` go into requests rebuilt from an access log; the \
                         sessions file {} is replayed as written, so they are not added",
                        queue.name,
                        path.display()
                    )));
                }
                continue;
            }
            Err(error) => {
                return Err(RunError::Import(
                    queue.places.of("ammofile").error(error.to_string()),
                ))
            }
        };
        notify(Notice::Info(&format!(
            "[{}] ammofile {} imported for the replay: {} (`tank import` does this once \
             for many runs)",
            queue.name,
            path.display(),
            file.summary
        )));
        let captures = imported.get_or_insert_with(|| Captures {
            config: config.clone(),
            _files: Vec::new(),
        });
        captures.config.queues[index].ammo = Some(AmmoSource::File {
            path: file.path().to_path_buf(),
            ammo_type: AmmoType::Sessions,
        });
        captures._files.push(file);
    }
    Ok(imported)
}
