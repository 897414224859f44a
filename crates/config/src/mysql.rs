//! `[mysql]`: tank's own section, the credentials of queues with
//! `tank_type = mysql`. A replay logs in as the test's user, never as the
//! captured one: the capture's credentials are not in it (only a scramble),
//! and the test server's users are the tester's.
//!
//! The password comes from `password` or from the environment variable
//! `password_env` names, read when the gun is set up (so a config can be
//! committed without it); one of the two at most.

use crate::convert;
use crate::error::{ConfigError, OptionPlace};
use crate::model::{LoadProfile, MysqlConfig, Password, ReplayConnections, TankType, TestConfig};
use crate::queue::entry_error;
use crate::raw::{RawConfig, RawSection};

/// Reads an enabled `[mysql]` section written in `file`.
pub(crate) fn read(
    section: &RawSection,
    file: &std::path::Path,
) -> Result<MysqlConfig, ConfigError> {
    let mut user = None;
    let mut password = None;
    let mut database = None;
    let mut ssl = false;
    for entry in &section.entries {
        let text = || -> Result<String, ConfigError> {
            convert::string(&entry.value)
                .map(|s| s.unwrap_or_default())
                .map_err(|m| entry_error(&section.name, entry, m))
        };
        let place = OptionPlace::new(file, entry.place, &section.name, &entry.key);
        match entry.key.as_str() {
            "user" => user = Some(text()?),
            "password" | "password_env" => {
                if password.is_some() {
                    return Err(entry_error(
                        &section.name,
                        entry,
                        "set `password` or `password_env`, not both",
                    ));
                }
                password = Some(if entry.key == "password" {
                    Password::Literal(text()?)
                } else {
                    let name = text()?.trim().to_owned();
                    if name.is_empty() {
                        return Err(entry_error(
                            &section.name,
                            entry,
                            "expected the name of an environment variable holding the password",
                        ));
                    }
                    Password::Env { name, place }
                });
            }
            "database" => database = Some(text()?).filter(|d| !d.trim().is_empty()),
            "ssl" => {
                ssl = convert::boolean(&entry.value)
                    .map_err(|m| entry_error(&section.name, entry, m))?
                    .unwrap_or(false)
            }
            // Checked against the table before: `enabled`, `package`.
            _ => {}
        }
    }
    let user = user.filter(|u| !u.is_empty()).ok_or_else(|| {
        ConfigError::new("`user` is required: the user a replay logs in as")
            .at(section.place)
            .in_section(&section.name)
    })?;
    Ok(MysqlConfig {
        user,
        password: password.unwrap_or(Password::Literal(String::new())),
        database,
        ssl,
    })
}

/// Give each `tank_type = mysql` queue the `[mysql]` section; a mysql queue
/// without it, a section no queue uses, and `[phantom] ssl` on a mysql queue
/// (MySQL starts TLS inside its handshake) are errors.
pub(crate) fn attach(raw: &RawConfig, config: &mut TestConfig) -> Result<(), ConfigError> {
    let section = raw.sections.iter().find(|s| s.name == "mysql");
    let mut used = false;
    for queue in &mut config.queues {
        if queue.tank_type != TankType::Mysql {
            continue;
        }
        used = true;
        let LoadProfile::Replay(replay) = &queue.load_profile else {
            return Err(queue.places.of("tank_type").error(
                "`tank_type = mysql` replays captured MySQL sessions: set `ammo_type = \
                 sessions` and `ammofile` = the capture or its sessions file",
            ));
        };
        if replay.connections == ReplayConnections::PerRequest {
            return Err(queue.places.of("replay_connections").error(
                "a MySQL command runs in its connection's session (its schema, its \
                 transaction, its prepared statements): `per_request` cannot replay it; \
                 expected `captured`",
            ));
        }
        if queue.ssl {
            return Err(queue.places.of("ssl").error(
                "MySQL starts TLS inside its handshake, not before it: set `ssl = 1` in \
                 [mysql] instead (the queue's ssl_verify and client certificate still apply)",
            ));
        }
        queue.mysql = Some(config.mysql.clone().ok_or_else(|| {
            queue.places.of("tank_type").error(
                "`tank_type = mysql` logs in with the [mysql] section's `user` and \
                 `password` (or `password_env`): add one",
            )
        })?);
    }
    if config.mysql.is_none() || used {
        return Ok(());
    }
    let error = ConfigError::new(
        "no queue uses these credentials: they are for queues with `tank_type = mysql`",
    );
    Err(match section {
        Some(section) => error.at(section.place).in_section(&section.name),
        None => error.in_section("mysql"),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{load_str, ConfigFormat, MysqlConfig, Password, ReplyFraming, TankType};

    const MYSQL: &str = "[phantom]\naddress = 127.0.0.1:3306\ntank_type = mysql\n\
                         ammo_type = sessions\nammofile = db.pcap\n";

    fn load(text: &str) -> Result<crate::TestConfig, String> {
        load_str(text, ConfigFormat::Ini, Path::new("load.ini"), &[]).map_err(|e| e.to_string())
    }

    #[test]
    fn a_mysql_queue_gets_the_mysql_section() {
        let config = load(&format!(
            "{MYSQL}[mysql]\nuser = tank\npassword_env = DB_PASS\ndatabase = shop\n"
        ))
        .unwrap();
        let queue = &config.queues[0];
        assert_eq!(queue.tank_type, TankType::Mysql);
        let mysql: &MysqlConfig = queue.mysql.as_ref().unwrap();
        assert_eq!(mysql.user, "tank");
        assert_eq!(mysql.database.as_deref(), Some("shop"));
        assert!(matches!(&mysql.password, Password::Env { name, .. } if name == "DB_PASS"));
        assert!(!mysql.ssl);
    }

    #[test]
    fn mistakes_are_located_errors() {
        let cases = [
            (
                MYSQL.to_owned(),
                "load.ini:3: [phantom] tank_type: `tank_type = mysql` logs in",
            ),
            (
                format!("{MYSQL}[mysql]\npassword = x\n"),
                "[mysql]: `user` is required",
            ),
            (
                format!("{MYSQL}[mysql]\nuser = a\npassword = x\npassword_env = Y\n"),
                "load.ini:9: [mysql] password_env: set `password` or `password_env`, not both",
            ),
            (
                format!("{MYSQL}ssl = 1\n[mysql]\nuser = a\n"),
                "[phantom] ssl: MySQL starts TLS inside its handshake",
            ),
            (
                format!("{MYSQL}replay_connections = per_request\n[mysql]\nuser = a\n"),
                "`per_request` cannot replay it",
            ),
            (
                "[phantom]\naddress = a:1\ntank_type = mysql\nrps_schedule = const(1,1s)\n\
                 ammofile = a\n[mysql]\nuser = a\n"
                    .to_owned(),
                "replays captured MySQL sessions",
            ),
            (
                "[phantom]\naddress = a:1\nrps_schedule = const(1,1s)\nammofile = a\n\
                 [mysql]\nuser = a\n"
                    .to_owned(),
                "load.ini:5: [mysql]: no queue uses these credentials",
            ),
        ];
        for (text, expected) in cases {
            let error = load(&text).unwrap_err();
            assert!(error.contains(expected), "{text}\n{error}");
        }
    }

    #[test]
    fn reply_framing_is_for_plain_tcp_only() {
        let tcp = "[phantom]\naddress = a:1\nrps_schedule = const(1,1s)\nammofile = a\n\
                   tank_type = none\n";
        let config = load(&format!("{tcp}reply_delimiter = \\0\n")).unwrap();
        assert_eq!(
            config.queues[0].reply_framing,
            ReplyFraming::Delimiter(vec![0])
        );
        let config = load(&format!("{tcp}reply_length_prefix = 4\n")).unwrap();
        assert_eq!(
            config.queues[0].reply_framing,
            ReplyFraming::LengthPrefix(4)
        );
        let both = load(&format!(
            "{tcp}reply_length_prefix = 4\nreply_delimiter = x\n"
        ));
        assert!(both.unwrap_err().contains("not both"));
        let named_tcp = load(&tcp.replace("= none", "= tcp")).unwrap();
        assert_eq!(named_tcp.queues[0].tank_type, TankType::None);
        let three = load(&format!("{tcp}reply_length_prefix = 3\n"));
        assert!(three.unwrap_err().contains("1, 2, 4 or 8"));
        let http = load(
            "[phantom]\naddress = a:1\nrps_schedule = const(1,1s)\nammofile = a\n\
             reply_delimiter = x\n",
        );
        assert!(http
            .unwrap_err()
            .contains("load.ini:5: [phantom] reply_delimiter: reply framing is for plain TCP"));
    }
}
