//! `[memcached]`: tank's own section, mcperf's workload model for queues
//! with `tank_type = memcached` and no `ammofile` or `uris`.
//!
//! The config crate checks what the text alone can tell (a distribution's
//! name and parameters, ranges); sampling is the plan's business.

use crate::convert;
use crate::error::ConfigError;
use crate::model::{AmmoSource, Distribution, KeyOrder, MemcachedConfig, TestConfig};
use crate::queue::entry_error;
use crate::raw::{RawConfig, RawSection};

/// The longest key memcached accepts.
pub const MAX_KEY: u64 = 250;
/// The largest value tank asks memcached to store (its default item size limit).
pub const MAX_VALUE: u64 = 1 << 20;
/// The most records a workload may name.
pub const MAX_RECORDS: u64 = 1 << 32;

/// Reads an enabled `[memcached]` section.
pub(crate) fn read(section: &RawSection) -> Result<MemcachedConfig, ConfigError> {
    let mut config = MemcachedConfig::default();
    for entry in &section.entries {
        let fail = |message: String| entry_error(&section.name, entry, message);
        let text = || -> Result<String, ConfigError> {
            convert::string(&entry.value)
                .map(|s| s.unwrap_or_default().trim().to_owned())
                .map_err(|m| entry_error(&section.name, entry, m))
        };
        let number = |low: f64, high: f64| -> Result<f64, ConfigError> {
            let text = text()?;
            text.parse::<f64>()
                .ok()
                .filter(|n| (low..=high).contains(n))
                .ok_or_else(|| {
                    fail(format!(
                        "expected a number from {low} to {high}, found `{text}`"
                    ))
                })
        };
        let count = |low: u64, high: u64| -> Result<u64, ConfigError> {
            let text = text()?;
            text.parse::<u64>()
                .ok()
                .filter(|n| (low..=high).contains(n))
                .ok_or_else(|| {
                    fail(format!(
                        "expected a whole number from {low} to {high}, found `{text}`"
                    ))
                })
        };
        match entry.key.as_str() {
            "records" => config.records = count(1, MAX_RECORDS)?,
            "keysize" => config.keysize = Distribution::parse(&text()?).map_err(fail)?,
            "valuesize" => config.valuesize = Distribution::parse(&text()?).map_err(fail)?,
            "update" => config.update = number(0.0, 1.0)?,
            "keyorder" => config.keyorder = KeyOrder::parse(&text()?).map_err(fail)?,
            "getq_size" => config.getq_size = count(1, 10_000)? as u32,
            "getq_freq" => config.getq_freq = number(0.0, 100.0)?,
            "seed" => {
                config.seed = count(0, u64::MAX)?;
                config.seed_chosen = false;
            }
            "preload" => {
                config.preload = convert::boolean(&entry.value)
                    .map_err(|m| entry_error(&section.name, entry, m))?
                    .unwrap_or(false)
            }
            // Checked against the table before: `enabled`, `package`.
            _ => {}
        }
    }
    Ok(config)
}

/// A `[memcached]` section that no queue uses would be silently ignored:
/// it is an error instead.
pub(crate) fn check_used(raw: &RawConfig, config: &TestConfig) -> Result<(), ConfigError> {
    let used = config
        .queues
        .iter()
        .any(|q| matches!(q.ammo, Some(AmmoSource::Memcached(_))));
    if config.memcached.is_none() || used {
        return Ok(());
    }
    let section = raw.sections.iter().find(|s| s.name == "memcached");
    let error = ConfigError::new(
        "no queue uses this workload: it drives queues with `tank_type = memcached` \
         and neither `ammofile` nor `uris`",
    );
    Err(match section {
        Some(section) => error.at(section.place).in_section(&section.name),
        None => error.in_section("memcached"),
    })
}

impl Default for MemcachedConfig {
    /// mcperf's defaults.
    fn default() -> Self {
        MemcachedConfig {
            records: 10_000,
            keysize: Distribution::Fixed(30.0),
            valuesize: Distribution::Fixed(200.0),
            update: 0.0,
            keyorder: KeyOrder::Random,
            getq_size: 100,
            getq_freq: 0.0,
            seed: crate::seed::chosen_seed(),
            seed_chosen: true,
            preload: false,
        }
    }
}

impl Distribution {
    /// mcperf's spelling: `[fixed:]V`, `uniform:MAX`, `normal:MEAN,SD`,
    /// `exponential:LAMBDA`, `pareto:LOC,SCALE,SHAPE`, `gev:LOC,SCALE,SHAPE`,
    /// `fb_key`, `fb_value`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (name, params) = text.split_once(':').unwrap_or(match text {
            "fb_key" | "fb_value" => (text, ""),
            _ => ("fixed", text),
        });
        let numbers = if params.is_empty() {
            Ok(Vec::new())
        } else {
            crate::convert::finite_numbers(params)
        };
        let expected = "expected a distribution: [fixed:]V, uniform:MAX, normal:MEAN,SD, \
                        exponential:LAMBDA, pareto:LOC,SCALE,SHAPE, gev:LOC,SCALE,SHAPE, \
                        fb_key or fb_value";
        let numbers = numbers.map_err(|m| format!("{m}: {expected}, found `{text}`"))?;
        let wrong = || format!("{expected}, found `{text}`");
        let positive = |n: f64, what: &str| {
            if n > 0.0 {
                Ok(n)
            } else {
                Err(format!("{what} must be above 0, found {n} in `{text}`"))
            }
        };
        Ok(match (name, numbers.as_slice()) {
            ("fixed", [v]) if *v >= 0.0 => Distribution::Fixed(*v),
            ("uniform", [max]) => Distribution::Uniform {
                max: positive(*max, "the maximum")?,
            },
            ("normal", [mean, sd]) => Distribution::Normal {
                mean: *mean,
                sd: positive(*sd, "the standard deviation")?,
            },
            ("exponential", [lambda]) => Distribution::Exponential {
                lambda: positive(*lambda, "lambda")?,
            },
            ("pareto", [loc, scale, shape]) => Distribution::Pareto {
                loc: *loc,
                scale: positive(*scale, "the scale")?,
                shape: *shape,
            },
            ("gev", [loc, scale, shape]) => Distribution::Gev {
                loc: *loc,
                scale: positive(*scale, "the scale")?,
                shape: *shape,
            },
            ("fb_key", []) => Distribution::FbKey,
            ("fb_value", []) => Distribution::FbValue,
            _ => return Err(wrong()),
        })
    }
}

impl KeyOrder {
    /// `random`, `sequential`, or a distribution whose samples pick the record.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "random" | "none" => Ok(KeyOrder::Random),
            "sequential" => Ok(KeyOrder::Sequential),
            other => Distribution::parse(other)
                .map(KeyOrder::Distribution)
                .map_err(|m| format!("expected `random`, `sequential` or a distribution: {m}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ini(text: &str) -> Result<crate::TestConfig, ConfigError> {
        crate::load_str(
            text,
            crate::ConfigFormat::Ini,
            std::path::Path::new("load.ini"),
            &[],
        )
    }

    const QUEUE: &str = "[phantom]\naddress = 127.0.0.1:11211\ntank_type = memcached\n\
                         rps_schedule = const(1,1s)\n";

    #[test]
    fn a_memcached_queue_without_ammo_runs_the_section_s_workload() {
        let c = ini(&format!(
            "{QUEUE}depth = 4\n[memcached]\nrecords = 5\nkeysize = fb_key\nupdate = 0.1\n\
             getq_freq = 50\ngetq_size = 3\nseed = 9\npreload = 1\nkeyorder = sequential\n"
        ))
        .unwrap();
        let Some(AmmoSource::Memcached(w)) = &c.queues[0].ammo else {
            panic!("{:?}", c.queues[0].ammo);
        };
        assert_eq!(
            (
                w.records,
                w.keysize,
                w.update,
                w.getq_freq,
                w.getq_size,
                w.seed,
                w.seed_chosen
            ),
            (5, Distribution::FbKey, 0.1, 50.0, 3, 9, false)
        );
        assert!(w.preload && w.keyorder == KeyOrder::Sequential);
        assert_eq!(c.queues[0].depth, 4);
        // mcperf's defaults, and a seed tank chose.
        let c = ini(&format!("{QUEUE}[memcached]\n")).unwrap();
        let Some(AmmoSource::Memcached(w)) = &c.queues[0].ammo else {
            panic!();
        };
        assert_eq!(
            (w.records, w.keysize, w.valuesize),
            (
                10_000,
                Distribution::Fixed(30.0),
                Distribution::Fixed(200.0)
            )
        );
        assert!(w.seed_chosen);
    }

    #[test]
    fn bad_workloads_are_errors_that_say_where() {
        for (text, wanted) in [
            (
                "[memcached]\nkeysize = zipf:1\n",
                "load.ini:6: [memcached] keysize",
            ),
            (
                "[memcached]\nupdate = 2\n",
                "expected a number from 0 to 1, found `2`",
            ),
            (
                "[memcached]\nrecords = 0\n",
                "expected a whole number from 1",
            ),
            ("[memcached]\nrecordz = 1\n", "did you mean `records`"),
        ] {
            let error = ini(&format!("{QUEUE}{text}")).unwrap_err().to_string();
            assert!(error.contains(wanted), "{text}: {error}");
        }
        let unused =
            "[phantom]\naddress = h:1\nrps_schedule = const(1,1s)\nuris = /\n[memcached]\n";
        let error = ini(unused).unwrap_err().to_string();
        assert!(error.contains("no queue uses this workload"), "{error}");
        let no_workload = ini(QUEUE).unwrap_err().to_string();
        assert!(
            no_workload.contains("may set neither and use a [memcached] section"),
            "{no_workload}"
        );
        let http_depth =
            "[phantom]\naddress = h:1\nrps_schedule = const(1,1s)\nuris = /\ndepth = 2\n";
        let error = ini(http_depth).unwrap_err().to_string();
        assert!(error.contains("only `tank_type = memcached`"), "{error}");
    }

    #[test]
    fn distributions_parse_in_mcperfs_spelling() {
        assert_eq!(Distribution::parse("30"), Ok(Distribution::Fixed(30.0)));
        assert_eq!(Distribution::parse("fixed:7"), Ok(Distribution::Fixed(7.0)));
        assert_eq!(
            Distribution::parse("normal:100,10"),
            Ok(Distribution::Normal {
                mean: 100.0,
                sd: 10.0
            })
        );
        assert_eq!(
            Distribution::parse("gev:30.7984,8.20449,0.078688"),
            Ok(Distribution::Gev {
                loc: 30.7984,
                scale: 8.20449,
                shape: 0.078688
            })
        );
        assert_eq!(Distribution::parse("fb_value"), Ok(Distribution::FbValue));
        for bad in [
            "",
            "normal:1",
            "uniform:0",
            "exponential:-1",
            "zipf:1",
            "fixed:x",
            "fb_key:1",
            "-3",
        ] {
            let error = Distribution::parse(bad).unwrap_err();
            assert!(error.contains(bad), "{bad}: {error}");
        }
        assert_eq!(KeyOrder::parse("none"), Ok(KeyOrder::Random));
        assert!(KeyOrder::parse("zipf").is_err());
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_an_error(text in ".{0,40}") {
            let _ = Distribution::parse(&text);
            let _ = KeyOrder::parse(&text);
        }

        #[test]
        fn written_distributions_read_back(a in 0.001f64..1e6, b in 0.001f64..1e6, c in -2.0f64..2.0) {
            for text in [format!("uniform:{a}"), format!("normal:{a},{b}"), format!("pareto:{c},{a},{c}")] {
                prop_assert!(Distribution::parse(&text).is_ok(), "{}", text);
            }
        }
    }
}
