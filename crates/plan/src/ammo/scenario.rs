//! A scenario file as ammo (`ammo_type = scenario`): each missile is one run
//! of a scenario, named by it (the scenario's name is its bytes and its tag);
//! the engine's scenario driver builds the run's requests as it goes.
//!
//! Scenarios are drawn by weight, as a seeded draw without replacement from
//! rounds: a pass over the ammo is one round, holding each scenario
//! weight / gcd(weights) times in an order shuffled for that round. So the
//! shares are exact over every round, the order is not a fixed cycle, and the
//! same seed (`arrivals_seed`) draws the same order. `loop` counts rounds,
//! `ammo_limit` runs, `chosen_cases` picks scenarios by name.

use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use tank_scenario::Book;

use super::passes::ReadState;
use super::Slot;
use crate::error::{PlanError, Result};

/// The most runs one round may hold.
const MAX_ROUND: u64 = 1 << 20;

/// `chosen_cases` picks scenarios by name: each must name one of `book`'s,
/// known before the first shot (a name that matches none would be silently
/// nothing, or, alone, a plan of no run).
pub(crate) fn check_chosen(book: &Book, chosen: &[Vec<u8>], path: &Path) -> Result<()> {
    let names: Vec<&str> = book.scenarios().iter().map(|s| s.name.as_str()).collect();
    let unknown: Vec<String> = chosen
        .iter()
        .filter(|case| !names.iter().any(|name| name.as_bytes() == case.as_slice()))
        .map(|case| String::from_utf8_lossy(case).into_owned())
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(PlanError::Config(format!(
        "chosen_cases `{}`: no scenario of {} has that name; expected names among its \
         scenarios: {}",
        unknown.join(" "),
        path.display(),
        names.join(", ")
    )))
}

/// Draws a scenario file's scenarios, round after round.
pub(crate) struct ScenarioReader {
    book: Arc<Book>,
    round: Vec<usize>,
    next: usize,
    rng: StdRng,
    done: bool,
}

impl ScenarioReader {
    /// Load the scenario file at `path` (its checks all run here), drawing with `seed`.
    pub(crate) fn open(path: &Path, seed: u64) -> Result<Self> {
        let book = tank_scenario::load(path, seed).map_err(PlanError::Scenario)?;
        let weights: Vec<u64> = book.scenarios().iter().map(|s| s.weight).collect();
        let divisor = weights.iter().copied().fold(0, gcd).max(1);
        let size: u64 = weights.iter().map(|w| w / divisor).sum();
        if size > MAX_ROUND {
            return Err(PlanError::Scenario(tank_scenario::ScenarioError {
                path: path.to_path_buf(),
                line: None,
                message: format!(
                    "the scenarios' weights make a round of {size} runs (weight / their greatest \
                     common divisor, added up); at most {MAX_ROUND}: use smaller or rounder weights"
                ),
            }));
        }
        let round = weights
            .iter()
            .enumerate()
            .flat_map(|(i, w)| std::iter::repeat_n(i, (w / divisor) as usize))
            .collect();
        let mut reader = ScenarioReader {
            book: Arc::new(book),
            round,
            next: 0,
            rng: StdRng::seed_from_u64(seed),
            done: false,
        };
        reader.round.shuffle(&mut reader.rng);
        Ok(reader)
    }

    /// The compiled file.
    pub(crate) fn book(&self) -> &Arc<Book> {
        &self.book
    }

    /// Advance to the next run; `false` when reading has ended.
    pub(crate) fn advance(&mut self, st: &mut ReadState, slot: &mut Slot) -> Result<bool> {
        if self.done || self.round.is_empty() {
            return Ok(false);
        }
        if self.next == self.round.len() {
            self.next = 0;
            if !st.passes.finish(true, &"scenario")? {
                self.done = true;
                return Ok(false);
            }
            self.round.shuffle(&mut self.rng);
        }
        let name = self.book.scenarios()[self.round[self.next]].name.as_bytes();
        slot.missile.clear();
        slot.missile.extend_from_slice(name);
        slot.set_tag(Some(name));
        self.next += 1;
        Ok(true)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ammo::Passes;

    fn reader(weights: &[u64], seed: u64) -> (tempfile::TempDir, ScenarioReader) {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("request \"r\" {\n  uri = \"/\"\n}\n");
        for (i, w) in weights.iter().enumerate() {
            text.push_str(&format!(
                "scenario \"s{i}\" {{\n  weight = {w}\n  requests = [\"r\"]\n}}\n"
            ));
        }
        let path = dir.path().join("s.hcl");
        std::fs::write(&path, text).unwrap();
        let reader = ScenarioReader::open(&path, seed).unwrap();
        (dir, reader)
    }

    fn draw(reader: &mut ScenarioReader, passes: Option<i64>) -> Vec<String> {
        let mut state = ReadState {
            passes: Passes::new(passes),
            written: 0,
        };
        let mut slot = Slot::default();
        let mut out = Vec::new();
        while out.len() < 1000 && reader.advance(&mut state, &mut slot).unwrap() {
            assert_eq!(slot.marker(), &slot.missile[..]);
            out.push(String::from_utf8(slot.missile.clone()).unwrap());
        }
        out
    }

    #[test]
    fn chosen_cases_must_name_scenarios() {
        let (_dir, reader) = reader(&[1, 1], 1);
        let path = Path::new("s.hcl");
        let chosen = |names: &[&str]| -> Vec<Vec<u8>> {
            names.iter().map(|n| n.as_bytes().to_vec()).collect()
        };
        assert!(check_chosen(reader.book(), &chosen(&["s1"]), path).is_ok());
        assert!(check_chosen(reader.book(), &[], path).is_ok());
        let error = check_chosen(reader.book(), &chosen(&["s0", "nosuch"]), path).unwrap_err();
        assert_eq!(
            error.to_string(),
            "chosen_cases `nosuch`: no scenario of s.hcl has that name; expected names among \
             its scenarios: s0, s1"
        );
    }

    #[test]
    fn every_round_holds_each_scenario_by_its_weight() {
        let (_dir, mut reader) = reader(&[2, 6, 4], 1);
        let runs = draw(&mut reader, Some(3));
        assert_eq!(runs.len(), 18, "three rounds of 1 + 3 + 2");
        for round in runs.chunks(6) {
            let count = |name: &str| round.iter().filter(|r| *r == name).count();
            assert_eq!((count("s0"), count("s1"), count("s2")), (1, 3, 2));
        }
        assert_ne!(runs[..6], runs[6..12], "each round is shuffled anew");
    }

    #[test]
    fn the_same_seed_draws_the_same_order() {
        let (_a, mut a) = reader(&[1, 5], 42);
        let (_b, mut b) = reader(&[1, 5], 42);
        assert_eq!(draw(&mut a, Some(4)), draw(&mut b, Some(4)));
    }

    #[test]
    fn weights_too_fine_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.hcl");
        std::fs::write(
            &path,
            "request \"r\" {\n  uri = \"/\"\n}\nscenario \"a\" {\n  weight = 999999\n  requests = [\"r\"]\n}\n\
             scenario \"b\" {\n  weight = 1000000\n  requests = [\"r\"]\n}\n",
        )
        .unwrap();
        let error = ScenarioReader::open(&path, 1).err().unwrap().to_string();
        assert!(error.contains("smaller or rounder weights"), "{error}");
    }
}
