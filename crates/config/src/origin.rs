//! `[origin]`: the origin simulator tank starts in-process, and the queues aimed at it.
//!
//! The section only says where the recipe is, where to listen, whether
//! posted recipes may fetch, and the body budget; the recipe and the budget's
//! units are the origin crate's business (tank-config does not depend on it),
//! so a bad recipe or budget is reported when the run starts. What is
//! checked here is what the config alone can tell: exactly one recipe
//! source, a listen address that parses, and that `address = origin` has an
//! `[origin]` to point at.

use std::net::SocketAddr;

use crate::convert;
use crate::error::ConfigError;
use crate::model::{OriginConfig, OriginRecipe, TestConfig, ORIGIN_ADDRESS};
use crate::queue::entry_error;
use crate::raw::{RawConfig, RawSection};

/// Where the simulator listens unless `listen` says otherwise: loopback, a free port.
const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// Reads an enabled `[origin]` section.
pub(crate) fn read(section: &RawSection) -> Result<OriginConfig, ConfigError> {
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match section.get(key) {
            Some(entry) => convert::string(&entry.value)
                .map(|s| s.filter(|s| !s.trim().is_empty()))
                .map_err(|m| entry_error(&section.name, entry, m)),
            None => Ok(None),
        }
    };
    let recipe = match (string("recipe")?, string("recipe_json")?) {
        (Some(path), None) => OriginRecipe::File(convert::expand_user(path.trim())),
        (None, Some(json)) => OriginRecipe::Json(json),
        (Some(_), Some(_)) => {
            let message = "set either `recipe` (a JSON file) or `recipe_json` (the JSON), not both";
            return Err(match section.get("recipe_json") {
                Some(entry) => entry_error(&section.name, entry, message),
                None => ConfigError::new(message).in_section(&section.name),
            });
        }
        (None, None) => {
            return Err(ConfigError::new(
                "a recipe is required: `recipe = FILE.json` or `recipe_json = {...}`",
            )
            .at(section.place)
            .in_section(&section.name))
        }
    };
    let listen = match (section.get("listen"), string("listen")?) {
        (Some(entry), Some(text)) => text.trim().parse::<SocketAddr>().map_err(|_| {
            let message = format!(
                "expected an address like 127.0.0.1:0 (IP and port; port 0 picks a free one), \
                 found `{text}`"
            );
            entry_error(&section.name, entry, message)
        })?,
        _ => DEFAULT_LISTEN
            .parse()
            .map_err(|_| ConfigError::new("internal: bad default listen address"))?,
    };
    let allow_fetch = match section.get("allow_fetch") {
        Some(entry) => convert::boolean(&entry.value)
            .map_err(|m| entry_error(&section.name, entry, m))?
            .unwrap_or(false),
        None => false,
    };
    Ok(OriginConfig {
        recipe,
        listen,
        allow_fetch,
        body_budget: string("body_budget")?.map(|s| s.trim().to_owned()),
    })
}

/// `address = origin` needs an (enabled) `[origin]` section.
pub(crate) fn check_queue_addresses(
    raw: &RawConfig,
    config: &TestConfig,
) -> Result<(), ConfigError> {
    if config.origin.is_some() {
        return Ok(());
    }
    let Some(queue) = config
        .queues
        .iter()
        .find(|q| q.address.trim() == ORIGIN_ADDRESS)
    else {
        return Ok(());
    };
    let message = "`address = origin` shoots at the origin simulator, which needs an [origin] \
                   section (recipe = FILE.json) to start it";
    // The address was written in the queue's own section, or inherited from [phantom].
    let written = [queue.name.as_str(), "phantom"]
        .into_iter()
        .find_map(|name| {
            let section = raw.sections.iter().find(|s| s.name == name)?;
            Some((name, section.get("address")?))
        });
    Err(match written {
        Some((section, entry)) => entry_error(section, entry, message),
        None => ConfigError::new(message).in_section(&queue.name),
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::{load_str, ConfigFormat, OriginRecipe, TestConfig};

    const QUEUE: &str = "[phantom]\naddress = origin\nrps_schedule = const(1,1s)\nuris = /\n";

    fn ini(text: &str) -> Result<TestConfig, crate::ConfigError> {
        load_str(text, ConfigFormat::Ini, Path::new("load.ini"), &[])
    }

    #[test]
    fn an_origin_section_names_a_recipe_file_and_listens_on_a_free_loopback_port() {
        let c = ini(&format!(
            "{QUEUE}[origin]\nrecipe = configs/origin/steady.json\n"
        ))
        .unwrap();
        let origin = c.origin.unwrap();
        assert_eq!(
            origin.recipe,
            OriginRecipe::File(PathBuf::from("configs/origin/steady.json"))
        );
        assert_eq!(origin.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!((origin.allow_fetch, origin.body_budget), (false, None));
        assert_eq!(c.queues[0].address, "origin");
    }

    #[test]
    fn allow_fetch_and_body_budget_are_read_as_written() {
        let c = ini(&format!(
            "{QUEUE}[origin]\nrecipe = r.json\nallow_fetch = 1\nbody_budget = 512mb\n"
        ))
        .unwrap();
        let origin = c.origin.unwrap();
        assert!(origin.allow_fetch);
        assert_eq!(origin.body_budget.as_deref(), Some("512mb"));
        let e = ini(&format!(
            "{QUEUE}[origin]\nrecipe = r.json\nallow_fetch =\n"
        ))
        .unwrap_err();
        assert_eq!(e.key(), Some("allow_fetch"));
    }

    #[test]
    fn recipe_json_and_listen_in_ini_toml_and_yaml() {
        let json = r#"{"stages": [{"at": 0, "latency": "99%: 1ms; 1%: 2ms"}]}"#;
        let ini_text = format!("{QUEUE}[origin]\nrecipe_json = {json}\nlisten = 127.0.0.1:8081\n");
        let toml_text = format!(
            "[phantom]\naddress = \"origin\"\nrps_schedule = \"const(1,1s)\"\nuris = \"/\"\n\
             [origin]\nrecipe_json = '{json}'\nlisten = \"127.0.0.1:8081\"\n"
        );
        let yaml_text = format!(
            "phantom:\n  address: origin\n  load_profile: {{load_type: rps, schedule: 'const(1,1s)'}}\n  \
             uris: [/]\norigin:\n  recipe_json: '{json}'\n  listen: 127.0.0.1:8081\n"
        );
        for (text, format) in [
            (ini_text, ConfigFormat::Ini),
            (toml_text, ConfigFormat::Toml),
            (yaml_text, ConfigFormat::Yaml),
        ] {
            let c = load_str(&text, format, Path::new("load"), &[]).unwrap();
            let origin = c.origin.unwrap();
            assert_eq!(origin.recipe, OriginRecipe::Json(json.into()), "{format:?}");
            assert_eq!(origin.listen, "127.0.0.1:8081".parse().unwrap());
        }
    }

    #[test]
    fn address_origin_without_an_origin_section_is_an_error_at_the_address() {
        let e = ini(QUEUE).unwrap_err();
        assert_eq!(
            (e.line(), e.section(), e.key()),
            (Some(2), Some("phantom"), Some("address"))
        );
        assert!(e.message().contains("needs an [origin] section"), "{e}");
        let e = ini(&format!("{QUEUE}[origin]\nenabled = 0\nrecipe = r.json\n")).unwrap_err();
        assert_eq!(e.key(), Some("address"));
    }

    #[test]
    fn an_origin_section_needs_exactly_one_recipe() {
        let e = ini(&format!("{QUEUE}[origin]\nlisten = 127.0.0.1:0\n")).unwrap_err();
        assert_eq!((e.line(), e.section()), (Some(5), Some("origin")));
        assert!(e.message().starts_with("a recipe is required"), "{e}");
        let e = ini(&format!(
            "{QUEUE}[origin]\nrecipe = a.json\nrecipe_json = {{}}\n"
        ))
        .unwrap_err();
        assert_eq!((e.line(), e.key()), (Some(7), Some("recipe_json")));
    }

    #[test]
    fn listen_must_be_an_ip_and_port_and_typos_get_a_suggestion() {
        let e = ini(&format!(
            "{QUEUE}[origin]\nrecipe = a.json\nlisten = localhost\n"
        ))
        .unwrap_err();
        assert_eq!(e.key(), Some("listen"));
        assert!(e.message().contains("found `localhost`"), "{e}");
        let e = ini(&format!(
            "{QUEUE}[origin]\nrecipe = a.json\nrecipie = b.json\n"
        ))
        .unwrap_err();
        assert_eq!(e.message(), "unknown option (did you mean `recipe`?)");
    }
}
