//! Whole-config tests: text in, [`TestConfig`] (or a located error) out.

use std::path::{Path, PathBuf};

use crate::{
    load_str, sniff_format, AmmoSource, AmmoType, Autocases, ConfigFormat, LoadProfile, Override,
    QueueConfig, TankType, TestConfig, WriteLog,
};

fn ini(text: &str) -> TestConfig {
    load_str(text, ConfigFormat::Ini, Path::new("load.ini"), &[]).unwrap()
}

fn ini_err(text: &str) -> crate::ConfigError {
    load_str(text, ConfigFormat::Ini, Path::new("load.ini"), &[]).unwrap_err()
}

fn toml(text: &str) -> TestConfig {
    load_str(text, ConfigFormat::Toml, Path::new("load.toml"), &[]).unwrap()
}

fn yaml(text: &str) -> TestConfig {
    load_str(text, ConfigFormat::Yaml, Path::new("load.yaml"), &[]).unwrap()
}

fn with(text: &str, overrides: &[&str]) -> Result<TestConfig, crate::ConfigError> {
    let overrides: Vec<Override> = overrides.iter().map(|o| o.parse().unwrap()).collect();
    load_str(text, ConfigFormat::Ini, Path::new("load.ini"), &overrides)
}

const MINIMAL: &str =
    "[phantom]\naddress = 127.0.0.1:8080\nrps_schedule = const(1,1s)\nammofile = ammo.txt\n";

#[test]
fn minimal_ini_gets_the_schema_defaults() {
    let c = ini(MINIMAL);
    assert_eq!(c.path, PathBuf::from("load.ini"));
    assert_eq!(c.format, ConfigFormat::Ini);
    assert_eq!(
        c.queues,
        vec![QueueConfig {
            name: "phantom".into(),
            address: "127.0.0.1:8080".into(),
            port: None,
            load_profile: LoadProfile::Rps("const(1,1s)".into()),
            load_profile_at: crate::OptionPlace::new(
                Path::new("load.ini"),
                crate::Place::Line(3),
                "phantom",
                "rps_schedule"
            ),
            ammo: Some(AmmoSource::File {
                path: "ammo.txt".into(),
                ammo_type: AmmoType::Phantom
            }),
            headers: vec![],
            header_http: "1.0".into(),
            autocases: Autocases::Off,
            enum_ammo: false,
            chosen_cases: vec![],
            loop_count: -1,
            ammo_limit: -1,
            instances: 1000,
            timeout: std::time::Duration::from_secs(11),
            ssl: false,
            tank_type: TankType::Http,
            writelog: WriteLog::Off,
            reply_limits: crate::ReplyLimits::default(),
            gatling_ip: vec![],
            client_certificate: None,
            client_key: None,
            client_cipher_suites: vec![],
            ssl_verify: false,
            places: c.queues[0].places.clone(),
            depth: 1,
            measure: false,
            arrivals: c.queues[0].arrivals,
            reply_framing: crate::ReplyFraming::Close,
            mysql: None,
            connections: None,
            grpc: None,
        }]
    );
    assert_eq!(c.autostop.criteria, Vec::<String>::new());
    assert_eq!(c.autostop.report_file, "autostop_report.txt");
    assert_eq!(c.core.artifacts_base_dir, "logs");
    assert_eq!(c.core.artifacts_dir, None);
    assert_eq!(c.rcassert.pass, Vec::<i32>::new());
    assert_eq!(c.rcassert.fail_code, 10);
    assert!(!c.console.short_only);
}

/// The same file yandex-tank's `convert_ini` turns into
/// headers `['Host: x', 'Accept: */*', 'Y: z']`, loop 10, instances 5, ...
#[test]
fn ini_values_are_converted_as_yandex_tank_converts_them() {
    let c = ini(
        "[phantom]\naddress = 127.0.0.1:8080\nrps_schedule = line(1,10,10s)\n  const(10,5s)\n\
         headers = [Host: x] [Accept: */*]\n  [Y: z]\nuris = /a\n   /b\nloop = 1_0\nssl = TRUE\n\
         enum_ammo = 2\ninstances = +5\n\
         [autostop]\nautostop = time(1s,10s)\n  http(5xx,10%,3s) net(xx,1,5)\n\
         [tank]\nartifacts_base_dir = out\n[rcassert]\npass = 21 22\n",
    );
    let q = &c.queues[0];
    assert_eq!(
        q.load_profile,
        LoadProfile::Rps("line(1,10,10s)\nconst(10,5s)".into())
    );
    assert_eq!(q.headers, ["Host: x", "Accept: */*", "Y: z"]);
    assert_eq!(
        q.ammo,
        Some(AmmoSource::Uris(vec!["/a".into(), "/b".into()]))
    );
    assert_eq!(
        (q.loop_count, q.instances, q.ssl, q.enum_ammo),
        (10, 5, true, true)
    );
    assert_eq!(
        c.autostop.criteria,
        ["time(1s,10s)", "http(5xx,10%,3s)", "net(xx,1,5)"]
    );
    assert_eq!(c.core.artifacts_base_dir, "out");
    assert_eq!(c.rcassert.pass, [21, 22]);
}

#[test]
fn booleans_follow_to_bool() {
    for (text, expected) in [
        ("1", true),
        ("0", false),
        ("-1", true),
        ("true", true),
        ("True", true),
        ("yes", false),
        ("on", false),
    ] {
        let c = ini(&format!("{MINIMAL}ssl = {text}\n"));
        assert_eq!(c.queues[0].ssl, expected, "ssl = {text}");
    }
}

#[test]
fn a_value_with_a_comment_after_it_or_an_unusual_boolean_is_said_as_read() {
    // As yandex-tank reads it: false, the comment part of the value.
    let c = ini(&format!("{MINIMAL}ssl = 1      ; TLS\n"));
    assert!(!c.queues[0].ssl);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(
        c.warnings[0].starts_with(
            "load.ini:5: [phantom] ssl: the value read is `1      ; TLS`: INI has no comments \
             after a value"
        ),
        "{:?}",
        c.warnings
    );
    assert!(
        c.warnings[0].contains("so `; TLS` is in it"),
        "{:?}",
        c.warnings
    );
    let c = ini(&format!("{MINIMAL}ssl = yes\n"));
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(
        c.warnings[0].contains("`yes` reads as false"),
        "{:?}",
        c.warnings
    );
    // The usual spellings, and a `;` with no space before it (a cookie), say nothing.
    for quiet in [
        "ssl = 1\n",
        "ssl = True\n",
        "ssl = 0\n",
        "headers = [Cookie: a=1; b=2]\n",
    ] {
        assert!(
            ini(&format!("{MINIMAL}{quiet}")).warnings.is_empty(),
            "{quiet}"
        );
    }
}

#[test]
fn an_empty_typed_value_is_an_error_naming_the_key() {
    let e = ini_err(&format!("{MINIMAL}loop =\n"));
    assert_eq!(
        (e.line(), e.section(), e.key()),
        (Some(5), Some("phantom"), Some("loop"))
    );
    assert!(e.message().contains("empty value"), "{e}");
    let e = ini_err(&format!("{MINIMAL}ssl =\n"));
    assert_eq!(e.key(), Some("ssl"));
}

#[test]
fn a_non_integer_is_an_error_with_file_line_section_key() {
    let e = ini_err(&format!("{MINIMAL}instances = many\n"));
    assert_eq!(
        e.to_string(),
        "load.ini:5: [phantom] instances: expected an integer, found `many`"
    );
}

#[test]
fn instances_must_be_positive() {
    let e = ini_err(&format!("{MINIMAL}instances = 0\n"));
    assert_eq!(e.key(), Some("instances"));
    assert!(e.message().contains("out of range"), "{e}");
}

#[test]
fn instances_and_threads_are_bounded() {
    let at = ini(&format!(
        "{MINIMAL}instances = 1000000
threads = 4096
"
    ));
    assert_eq!(at.queues[0].instances, crate::bounds::MAX_INSTANCES);
    assert_eq!(at.run.threads, Some(crate::bounds::MAX_THREADS));
    let e = ini_err(&format!(
        "{MINIMAL}instances = 1000001
"
    ));
    assert_eq!(
        e.to_string(),
        "load.ini:5: [phantom] instances: 1000001 is out of range; expected an integer from 1 to 1,000,000"
    );
    let e = ini_err(&format!(
        "{MINIMAL}threads = 4097
"
    ));
    assert_eq!(
        e.to_string(),
        "load.ini:5: [phantom] threads: 4097 is out of range; expected an integer from 1 to 4,096"
    );
}

#[test]
fn loop_and_ammo_limit_are_minus_one_or_a_count_up_to_the_shot_limit() {
    for (option, ok) in [
        ("loop", ["-1", "0", "1", "100000000000"]),
        ("ammo_limit", ["-1", "1", "2", "100000000000"]),
    ] {
        for value in ok {
            let c = ini(&format!(
                "{MINIMAL}{option} = {value}
"
            ));
            let got = if option == "loop" {
                c.queues[0].loop_count
            } else {
                c.queues[0].ammo_limit
            };
            assert_eq!(got.to_string(), value, "{option} = {value}");
        }
    }
    for (option, bad, least, what) in [
        ("loop", "100000000001", 0, "passes"),
        ("loop", "-2", 0, "passes"),
        ("ammo_limit", "100000000001", 1, "shots"),
        ("ammo_limit", "0", 1, "shots"),
        ("ammo_limit", "-9223372036854775808", 1, "shots"),
    ] {
        let e = ini_err(&format!(
            "{MINIMAL}{option} = {bad}
"
        ));
        assert_eq!(
            e.to_string(),
            format!(
                "load.ini:5: [phantom] {option}: {bad} is out of range; expected -1 for no limit, \
                 or a number of {what} from {least} to 100,000,000,000"
            )
        );
    }
}

#[test]
fn unknown_key_suggests_the_closest() {
    let e = ini_err("[phantom]\naddress = h\nrps_schedul = const(1,1s)\n");
    assert_eq!(
        e.to_string(),
        "load.ini:3: [phantom] rps_schedul: unknown option (did you mean `rps_schedule`?)"
    );
}

#[test]
fn unknown_keys_in_understood_sections_are_errors() {
    let e = ini_err(&format!("{MINIMAL}[autostop]\nautostp = time(1s,1s)\n"));
    assert_eq!((e.section(), e.key()), (Some("autostop"), Some("autostp")));
    assert!(e.message().contains("did you mean `autostop`"), "{e}");
    let e = ini_err(&format!("{MINIMAL}[tank]\nartifact_dir = x\n"));
    assert_eq!(e.section(), Some("tank"));
}

#[test]
fn core_accepts_its_keys_and_plugin_keys() {
    let c = ini(&format!(
        "{MINIMAL}[tank]\nartifacts_dir = out/1\nplugin_uploader = yandextank.plugins.DataUploader\nlock_dir = /tmp\n"
    ));
    assert_eq!(c.core.artifacts_dir.as_deref(), Some("out/1"));
    let c = ini(&format!("{MINIMAL}[core]\nartifacts_base_dir = base\n"));
    assert_eq!(c.core.artifacts_base_dir, "base");
}

#[test]
fn fail_on_warnings_is_off_unless_switched_on() {
    assert!(!ini(MINIMAL).core.fail_on_warnings);
    let c = ini(&format!("{MINIMAL}[tank]\nfail_on_warnings = 1\n"));
    assert!(c.core.fail_on_warnings);
    let e = ini_err(&format!("{MINIMAL}[tank]\nfail_on_warnings =\n"));
    assert_eq!(e.key(), Some("fail_on_warnings"), "{e}");
}

#[test]
fn keep_cpus_awake_is_on_unless_switched_off() {
    assert!(ini(MINIMAL).core.keep_cpus_awake);
    let c = ini(&format!("{MINIMAL}[tank]\nkeep_cpus_awake = 0\n"));
    assert!(!c.core.keep_cpus_awake);
    let e = ini_err(&format!("{MINIMAL}[tank]\nkeep_cpus_awake =\n"));
    assert_eq!(e.key(), Some("keep_cpus_awake"), "{e}");
    let t = toml(
        "[phantom]\naddress = \"127.0.0.1:8080\"\nrps_schedule = \"const(1,1s)\"\n\
        uris = [\"/\"]\n[tank]\nkeep_cpus_awake = false\n",
    );
    assert!(!t.core.keep_cpus_awake);
    let y = yaml("phantom:\n  address: 127.0.0.1:8080\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n  \
        uris: [/]\ncore: {keep_cpus_awake: false}\n");
    assert!(!y.core.keep_cpus_awake);
}

#[test]
fn other_plugin_sections_are_ignored_and_unknown_ones_are_errors() {
    let c = ini(&format!(
        "{MINIMAL}[overload]\ntoken_file = t\n[telegraf]\nconfig = none\n[shellexec]\nprepare = x\n[aggregator]\nfoo = 1\n"
    ));
    assert_eq!(c.queues.len(), 1);
    let e = ini_err(&format!("{MINIMAL}[autostp]\nautostop = time(1s,1s)\n"));
    assert_eq!(
        (e.line(), e.section(), e.key()),
        (Some(5), Some("autostp"), None)
    );
    assert!(
        e.message()
            .starts_with("unrecognized section (did you mean [autostop]?"),
        "{e}"
    );
}

#[test]
fn conflicting_schedules_are_an_error() {
    let e = ini_err(&format!("{MINIMAL}instances_schedule = const(1,1s)\n"));
    assert!(
        e.message()
            .starts_with("conflicting options: rps_schedule, instances_schedule"),
        "{e}"
    );
}

#[test]
fn exactly_one_of_uris_and_ammofile() {
    let e = ini_err("[phantom]\naddress = h\nrps_schedule = const(1,1s)\n");
    assert_eq!(
        e.to_string(),
        "load.ini:1: [phantom]: exactly one of `uris` and `ammofile` must be set (found: neither)"
    );
    let e = ini_err(&format!("{MINIMAL}uris = /a\n"));
    assert!(e.message().ends_with("(found: both)"), "{e}");
    let c = ini("[phantom]\naddress = h\nrps_schedule = const(1,1s)\nuris = /a\nammofile =\n");
    assert_eq!(c.queues[0].ammo, Some(AmmoSource::Uris(vec!["/a".into()])));
}

#[test]
fn missing_address_or_profile_are_errors() {
    let e = ini_err("[phantom]\nrps_schedule = const(1,1s)\nuris = /\n");
    assert!(e.message().contains("`address` is required"), "{e}");
    let e = ini_err("[phantom]\naddress = h\nuris = /\n");
    assert!(e.message().starts_with("no load profile"), "{e}");
    let e = ini_err("[phantom]\naddress = h\nuris = /\nstpd_file =\n");
    assert!(e.message().starts_with("empty schedule"), "{e}");
}

#[test]
fn blank_rps_schedule_is_kept_for_the_stepper_and_stpd_file_needs_no_ammo() {
    let c = ini("[phantom]\naddress = h\nuris = /\nrps_schedule =\n");
    assert_eq!(c.queues[0].load_profile, LoadProfile::Rps(String::new()));
    let c = ini("[phantom]\naddress = h\nstpd_file = a.stpd\n");
    assert_eq!(c.queues[0].ammo, None);
}

#[test]
fn typed_options_are_read() {
    let c = ini(&format!(
        "{MINIMAL}ammo_type = uripost\nport = 8081\nautocases = 2\nchosen_cases = a  b\x0bc\n\
         writelog = Proto_Warning\ntank_type = none\nheader_http = 1.1\ntimeout = 5s\n\
         gatling_ip = 10.0.0.1\n  10.0.0.2\nammo_limit = 7\nfile_cache = 100\nconnection_test = 0\n"
    ));
    let q = &c.queues[0];
    assert_eq!(
        q.ammo,
        Some(AmmoSource::File {
            path: "ammo.txt".into(),
            ammo_type: AmmoType::UriPost
        })
    );
    assert_eq!(q.port, Some(8081));
    assert_eq!(q.autocases, Autocases::Depth(2));
    assert_eq!(
        q.chosen_cases,
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
    assert_eq!(q.writelog, WriteLog::ProtoWarning);
    assert_eq!(q.tank_type, TankType::None);
    assert_eq!(
        (q.header_http.as_str(), q.timeout),
        ("1.1", std::time::Duration::from_secs(5))
    );
    assert_eq!(
        q.gatling_ip,
        vec![
            "10.0.0.1".parse::<std::net::IpAddr>().unwrap(),
            "10.0.0.2".parse().unwrap()
        ]
    );
    assert_eq!(q.ammo_limit, 7);
    // Options tank does not act on are accepted, with a warning naming each,
    // and a value yandex-tank's validator would refuse is said too.
    assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
    assert!(
        c.warnings[2].contains("writelog: yandex-tank 2.0.11's validator refuses this"),
        "{:?}",
        c.warnings
    );
    assert!(
        c.warnings[0]
            .starts_with("load.ini:16: [phantom] file_cache: an option tank does not act on"),
        "{:?}",
        c.warnings
    );
    assert!(c.warnings[1].contains("connection_test"));
}

#[test]
fn autocases_accepts_uri_and_uniq_and_rejects_other_words() {
    assert_eq!(
        ini(&format!("{MINIMAL}autocases = uri\n")).queues[0].autocases,
        Autocases::Uri
    );
    assert_eq!(
        ini(&format!("{MINIMAL}autocases = uniq\n")).queues[0].autocases,
        Autocases::Uniq
    );
    assert_eq!(
        ini(&format!("{MINIMAL}autocases = 0\n")).queues[0].autocases,
        Autocases::Off
    );
    let e = ini_err(&format!("{MINIMAL}autocases = path\n"));
    assert_eq!(
        e.message(),
        "expected an integer, `uri` or `uniq`, found `path`"
    );
}

#[test]
fn writelog_spellings() {
    for (text, expected) in [
        ("0", WriteLog::Off),
        ("false", WriteLog::Off),
        ("1", WriteLog::All),
        ("TRUE", WriteLog::All),
        ("all", WriteLog::All),
        ("proto_error", WriteLog::ProtoError),
    ] {
        assert_eq!(
            ini(&format!("{MINIMAL}writelog = {text}\n")).queues[0].writelog,
            expected,
            "{text}"
        );
    }
    assert!(ini_err(&format!("{MINIMAL}writelog = some\n"))
        .message()
        .starts_with("expected one of"));
}

#[test]
fn bad_enumerations_are_errors() {
    assert!(ini_err(&format!("{MINIMAL}ammo_type = json\n"))
        .message()
        .contains("`uripost`"));
    assert!(ini_err(&format!("{MINIMAL}tank_type = udp\n"))
        .message()
        .contains("`http`, `http2`, `grpc`, `none` (or `tcp`), `memcached` or `mysql`"));
    assert!(ini_err(&format!("{MINIMAL}port = 8o\n"))
        .message()
        .contains("digits only"));
    assert!(ini_err(&format!("{MINIMAL}port = 70000\n"))
        .message()
        .contains("out of range"));
}

#[test]
fn ignored_phantom_options_are_accepted_but_type_checked() {
    let c = ini(&format!(
        "{MINIMAL}affinity = 0-3\nphantom_path = /bin/phantom\nadditional_libs = a b\n\
         method_prefix = m\nuse_caching = 0\ncache_dir = /tmp\nforce_stepping = 1\nconfig =\nphout_file =\n"
    ));
    assert_eq!(c.queues.len(), 1);
}

#[test]
fn threads_is_a_positive_count_for_the_whole_run_read_from_phantom() {
    let c = ini(&format!(
        "{MINIMAL}threads = 3\n[phantom-1]\nrps_schedule = const(1, 1s)\n"
    ));
    assert_eq!(c.run.threads, Some(3));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(ini(MINIMAL).run.threads, None);
    // An extra queue's own value is not used, and it is said so.
    let c = ini(&format!(
        "{MINIMAL}threads = 3\n[phantom-1]\nrps_schedule = const(1, 1s)\nthreads = 5\nbuffered_seconds = 4\n"
    ));
    assert_eq!((c.run.threads, c.run.buffered_seconds), (Some(3), 2));
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(
        c.warnings[0].contains("[phantom-1] threads: `threads` holds for the whole run"),
        "{:?}",
        c.warnings
    );
    for bad in ["all", "0", "-2"] {
        let e = ini_err(&format!("{MINIMAL}threads = {bad}\n"));
        assert_eq!(e.key(), Some("threads"), "{bad}");
    }
}

#[test]
fn load_profile_dotted_keys_are_accepted_in_ini() {
    let c = ini("[phantom]\naddress = h\nuris = /\nload_profile.load_type = instances\nload_profile.schedule = line(1,5,5s)\n");
    assert_eq!(
        c.queues[0].load_profile,
        LoadProfile::Instances("line(1,5,5s)".into())
    );
    let c = ini("[phantom]\naddress = h\nuris = /\nstpd_file = ~/x.stpd\n");
    let home = std::env::var("HOME").unwrap_or_default();
    if !home.is_empty() {
        assert_eq!(
            c.queues[0].load_profile,
            LoadProfile::StpdFile(PathBuf::from(home).join("x.stpd"))
        );
    }
    let e = ini_err("[phantom]\naddress = h\nuris = /\nload_profile.load_type = bursts\nload_profile.schedule = x\n");
    assert_eq!(e.key(), Some("load_profile.load_type"));
}

#[test]
fn extra_queues_inherit_main_options_shallowly_in_file_order() {
    let c = ini(
        "[phantom]\naddress = main:80\nrps_schedule = const(1,1s)\nammofile = a.ammo\n\
         headers = [A: 1] [B: 2]\ninstances = 10\n\
         [phantom-2]\naddress = two:80\nheaders = [C: 3]\n\
         [autostop]\nautostop = time(1s,1s)\n\
         [phantom-1]\ninstances_schedule = line(1,5,5s)\nuris = /x\nammofile =\n",
    );
    let names: Vec<_> = c.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["phantom", "phantom-2", "phantom-1"]);
    let two = &c.queues[1];
    assert_eq!(two.address, "two:80");
    assert_eq!(two.headers, ["C: 3"]);
    assert_eq!(two.instances, 10);
    assert_eq!(two.load_profile, LoadProfile::Rps("const(1,1s)".into()));
    let one = &c.queues[2];
    assert_eq!(one.address, "main:80");
    assert_eq!(one.headers, ["A: 1", "B: 2"]);
    assert_eq!(
        one.load_profile,
        LoadProfile::Instances("line(1,5,5s)".into())
    );
    assert_eq!(one.ammo, Some(AmmoSource::Uris(vec!["/x".into()])));
}

#[test]
fn an_extra_queue_setting_uris_over_an_inherited_ammofile_is_an_error() {
    let e = ini_err(&format!("{MINIMAL}[phantom-1]\nuris = /x\n"));
    assert_eq!(e.section(), Some("phantom-1"));
    assert!(e.message().ends_with("(found: both)"), "{e}");
}

#[test]
fn an_error_in_an_inherited_option_names_the_section_it_was_written_in() {
    let e = ini_err("[phantom-1]\naddress = x\n[phantom]\naddress = h\nuris = /\nrps_schedule = const(1,1s)\ntank_type = udp\n");
    assert_eq!((e.line(), e.section()), (Some(7), Some("phantom")));
}

#[test]
fn extra_queues_need_phantom() {
    let e = ini_err("[phantom-1]\naddress = h\nrps_schedule = const(1,1s)\nuris = /\n");
    assert_eq!(e.section(), Some("phantom-1"));
    assert!(
        e.message()
            .starts_with("extra queue without a [phantom] section"),
        "{e}"
    );
    let e = ini_err("[autostop]\nautostop = time(1s,1s)\n");
    assert_eq!(
        e.to_string(),
        "load.ini: no [phantom] section (YAML: phantom:): nothing to run"
    );
}

#[test]
fn disabled_sections() {
    let e = ini_err(&format!("{MINIMAL}enabled = 0\n"));
    assert_eq!(e.message(), "phantom is disabled: nothing to run");
    let c = ini(&format!("{MINIMAL}[phantom-1]\nenabled = false\naddress = x\n[autostop]\nenabled = 0\nautostop = time(1s,1s)\n"));
    assert_eq!(c.queues.len(), 1);
    assert!(c.autostop.criteria.is_empty());
    let c = ini(&format!(
        "{MINIMAL}[autostop]\nautostop = time(1s,1s)\n[tank]\nplugin_autostop =\n"
    ));
    assert!(c.autostop.criteria.is_empty());
}

#[test]
fn default_section_keys_are_dropped_everywhere() {
    let c = ini(&format!("[DEFAULT]\nloop = 5\n{MINIMAL}loop = 3\n"));
    assert_eq!(c.queues[0].loop_count, -1);
}

#[test]
fn rcassert_and_console() {
    let c = ini(&format!("{MINIMAL}[rcassert]\npass = 0 21\nfail_code = 3\n[console]\nshort_only = 1\ninfo_panel_width = 30\n"));
    assert_eq!(
        (c.rcassert.pass.clone(), c.rcassert.fail_code),
        (vec![0, 21], 3)
    );
    assert!(c.console.short_only);
    let e = ini_err(&format!("{MINIMAL}[rcassert]\npass = 0 x\n"));
    assert_eq!(e.key(), Some("pass"));
}

#[test]
fn overrides_apply_before_validation_like_ini_values() {
    let c = with(
        MINIMAL,
        &[
            "phantom.instances=7",
            "phantom.rps_schedule=line(1,2,3s)",
            "autostop.autostop=time(1s,2s)",
        ],
    )
    .unwrap();
    assert_eq!(c.queues[0].instances, 7);
    assert_eq!(
        c.queues[0].load_profile,
        LoadProfile::Rps("line(1,2,3s)".into())
    );
    assert_eq!(c.autostop.criteria, ["time(1s,2s)"]);
    let c = with(MINIMAL, &["phantom.instances_schedule=const(2,2s)"]).unwrap();
    assert_eq!(
        c.queues[0].load_profile,
        LoadProfile::Instances("const(2,2s)".into())
    );
    let c = with(MINIMAL, &["phantom.load_profile.schedule=const(3,3s)"]).unwrap();
    assert_eq!(
        c.queues[0].load_profile,
        LoadProfile::Rps("const(3,3s)".into())
    );
}

#[test]
fn a_bad_override_names_the_override() {
    let e = with(MINIMAL, &["phantom.instances=x"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "load.ini: -o phantom.instances: expected an integer, found `x`"
    );
    let e = with(MINIMAL, &["phantom.instancs=1"]).unwrap_err();
    assert!(e.message().contains("did you mean `instances`"), "{e}");
}

const EQUIVALENT_INI: &str = "[phantom]\naddress = 127.0.0.1:8080\nrps_schedule = line(1,10,10s)\n\
    headers = [Host: x] [Accept: */*]\nuris = /1 /2\nloop = 3\nheader_http = 1.1\nssl = 1\n\
    instances = 50\nautocases = 1\n\
    [phantom-1]\naddress = 127.0.0.1:8081\ninstances_schedule = const(5,10s)\nammofile = a.ammo\nuris =\n\
    ammo_type = uri\n\
    [autostop]\nautostop = time(1s,10s) http(5xx,10%,3s)\n[tank]\nartifacts_base_dir = out\n";

/// The queues with where their schedules were written left out: the spellings
/// put them on different lines (YAML even under another key).
fn unplaced(queues: &[QueueConfig]) -> Vec<QueueConfig> {
    let nowhere = crate::OptionPlace::new(Path::new(""), crate::Place::Unknown, "", "");
    queues
        .iter()
        .map(|q| QueueConfig {
            load_profile_at: nowhere.clone(),
            places: crate::Places {
                section: nowhere.clone(),
                options: Vec::new(),
            },
            // Each reading draws its own seed.
            arrivals: crate::Arrivals {
                seed: 0,
                ..q.arrivals
            },
            ..q.clone()
        })
        .collect()
}

#[test]
fn toml_spelling_gives_the_same_config() {
    let t = toml("[phantom]\naddress = \"127.0.0.1:8080\"\nrps_schedule = \"line(1,10,10s)\"\n\
        headers = [\"Host: x\", \"[Accept: */*]\"]\nuris = [\"/1\", \"/2\"]\nloop = 3\nheader_http = 1.1\n\
        ssl = true\ninstances = \"50\"\nautocases = 1\n\
        [phantom-1]\naddress = \"127.0.0.1:8081\"\ninstances_schedule = \"const(5,10s)\"\n\
        ammofile = \"a.ammo\"\nuris = []\nammo_type = \"uri\"\n\
        [autostop]\nautostop = [\"time(1s,10s)\", \"http(5xx,10%,3s)\"]\n[tank]\nartifacts_base_dir = \"out\"\n");
    let i = ini(EQUIVALENT_INI);
    assert_eq!(unplaced(&t.queues), unplaced(&i.queues));
    assert_eq!(t.autostop.criteria, i.autostop.criteria);
    assert_eq!(t.core, i.core);
}

#[test]
fn yaml_spelling_gives_the_same_config() {
    let y = yaml("phantom:\n  enabled: true\n  package: yandextank.plugins.Phantom\n  address: 127.0.0.1:8080\n  \
        load_profile: {load_type: rps, schedule: 'line(1,10,10s)'}\n  headers: ['Host: x', '[Accept: */*]']\n  \
        uris: [/1, /2]\n  loop: 3\n  header_http: '1.1'\n  ssl: true\n  instances: 50\n  autocases: 1\n  \
        multi:\n    - name: phantom-1\n      address: 127.0.0.1:8081\n      \
        load_profile: {load_type: instances, schedule: 'const(5,10s)'}\n      ammofile: a.ammo\n      uris: []\n      ammo_type: uri\n\
        autostop:\n  enabled: true\n  package: yandextank.plugins.Autostop\n  autostop: ['time(1s,10s)', 'http(5xx,10%,3s)']\n\
        core: {artifacts_base_dir: out}\nuploader: {enabled: false, api_address: 'https://x'}\n");
    let i = ini(EQUIVALENT_INI);
    assert_eq!(unplaced(&y.queues), unplaced(&i.queues));
    let where_written = |q: &QueueConfig| q.load_profile_at.error("x").to_string();
    assert_eq!(
        where_written(&y.queues[1]),
        "load.yaml:16: [phantom-1] load_profile.schedule: x"
    );
    assert_eq!(
        where_written(&i.queues[1]),
        "load.ini:13: [phantom-1] instances_schedule: x"
    );
    assert_eq!(y.autostop.criteria, i.autostop.criteria);
    assert_eq!(y.core, i.core);
}

#[test]
fn yaml_multi_entries_are_named_by_index_and_replace_load_profile_whole() {
    let y = yaml("phantom:\n  address: h\n  uris: [/]\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n  \
        multi:\n  - address: a\n  - address: b\n    load_profile: {load_type: instances, schedule: 'const(2,2s)'}\n");
    let names: Vec<_> = y.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["phantom", "phantom-multi-0", "phantom-multi-1"]);
    assert_eq!(
        y.queues[1].load_profile,
        LoadProfile::Rps("const(1,1s)".into())
    );
    assert_eq!(
        y.queues[2].load_profile,
        LoadProfile::Instances("const(2,2s)".into())
    );
}

#[test]
fn yaml_disabled_phantom_and_errors_with_lines() {
    let e = load_str(
        "phantom:\n  enabled: false\n",
        ConfigFormat::Yaml,
        Path::new("l.yaml"),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.message(), "phantom is disabled: nothing to run");
    let e = load_str(
        "phantom:\n  address: h\n  adress: h\n",
        ConfigFormat::Yaml,
        Path::new("l.yaml"),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "l.yaml:3: [phantom] adress: unknown option (did you mean `address`?)"
    );
}

#[test]
fn yaml_native_and_string_scalars_mean_the_same() {
    let a = yaml("phantom:\n  address: h\n  uris: '/a /b'\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n  loop: '3'\n  ssl: 'true'\n  headers: '[A: b]'\n  port: 81\n");
    let b = yaml("phantom:\n  address: h\n  uris: [/a, /b]\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n  loop: 3\n  ssl: true\n  headers: ['A: b']\n  port: '81'\n");
    assert_eq!(unplaced(&a.queues), unplaced(&b.queues));
    assert_eq!(a.queues[0].port, Some(81));
}

#[test]
fn toml_float_header_http_keeps_a_fraction() {
    let t = toml("[phantom]\naddress = \"h\"\nuris = \"/a\"\nrps_schedule = \"const(1,1s)\"\nheader_http = 1.0\n");
    assert_eq!(t.queues[0].header_http, "1.0");
    assert_eq!(t.queues[0].ammo, Some(AmmoSource::Uris(vec!["/a".into()])));
}

#[test]
fn toml_multi_tables_are_extra_queues() {
    let t = toml(
        "[phantom]\naddress = \"h\"\nuris = \"/a\"\nrps_schedule = \"const(1,1s)\"\n\
        [[phantom.multi]]\nname = \"api\"\naddress = \"x\"\n",
    );
    assert_eq!(t.queues[1].name, "api");
    assert_eq!(t.queues[1].address, "x");
}

#[test]
fn sniffing_decides_by_first_meaningful_line() {
    assert_eq!(sniff_format(MINIMAL), Some(ConfigFormat::Ini));
    assert_eq!(
        sniff_format("# c\n[phantom]\naddress = \"h\"\n"),
        Some(ConfigFormat::Toml)
    );
    assert_eq!(
        sniff_format("phantom:\n  address: h\n"),
        Some(ConfigFormat::Yaml)
    );
    assert_eq!(sniff_format("just words\n"), None);
    assert_eq!(sniff_format(""), None);
}

#[test]
fn load_reads_files_by_extension_and_sniffs_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("load.conf");
    std::fs::write(&path, MINIMAL).unwrap();
    assert_eq!(crate::load(&path, &[]).unwrap().format, ConfigFormat::Ini);
    let path = dir.path().join("load.txt");
    std::fs::write(&path, "phantom:\n  address: h\n  uris: [/]\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n").unwrap();
    assert_eq!(crate::load(&path, &[]).unwrap().format, ConfigFormat::Yaml);
    // What the text does not tell is read as YAML, as yandex-tank reads it;
    // `version:` is yandex-tank 2's schema key.
    let path = dir.path().join("load");
    std::fs::write(&path, "version: 2\nphantom:\n  address: h\n  uris: [/]\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n").unwrap();
    assert_eq!(crate::load(&path, &[]).unwrap().format, ConfigFormat::Yaml);
    let path = dir.path().join("load.txt");
    std::fs::write(&path, "words\n").unwrap();
    let e = crate::load(&path, &[]).unwrap_err();
    assert_eq!(e.file(), path.as_path());
    let missing = dir.path().join("missing.ini");
    let e = crate::load(&missing, &[]).unwrap_err();
    assert_eq!(e.file(), missing.as_path());
    assert!(e.message().starts_with("cannot read the config"));
    let path = dir.path().join("bad.ini");
    std::fs::write(&path, b"[phantom]\naddress = \xff\n").unwrap();
    assert_eq!(crate::load(&path, &[]).unwrap_err().line(), Some(2));
}

#[test]
fn yaml_sections_with_custom_names_are_identified_by_package() {
    let base = "phantom:\n  address: h\n  uris: [/]\n  load_profile: {load_type: rps, schedule: 'const(1,1s)'}\n";
    let c = yaml(&format!(
        "{base}my_uploader:\n  package: yandextank.plugins.DataUploader\n  token: x\n"
    ));
    assert_eq!(c.queues.len(), 1);
    let e = load_str(
        &format!(
            "{base}stops:\n  package: yandextank.plugins.Autostop\n  autostop: [time(1s,1s)]\n"
        ),
        ConfigFormat::Yaml,
        Path::new("l.yaml"),
        &[],
    )
    .unwrap_err();
    assert_eq!((e.section(), e.key()), (Some("stops"), Some("package")));
    let e = load_str(
        &format!("{base}whatever:\n  a: 1\n"),
        ConfigFormat::Yaml,
        Path::new("l.yaml"),
        &[],
    )
    .unwrap_err();
    assert!(e.message().starts_with("unrecognized section"), "{e}");
}

#[test]
fn a_config_from_options_alone_equals_the_same_lines_in_a_file() {
    let options: Vec<Override> = [
        "phantom.address=127.0.0.1:8080",
        "phantom.rps_schedule=const(1,1s)",
        "phantom.ammofile=ammo.txt",
    ]
    .iter()
    .map(|o| o.parse().unwrap())
    .collect();
    let built = crate::from_options(Path::new("load.ini"), &options).unwrap();
    assert_eq!(unplaced(&built.queues), unplaced(&ini(MINIMAL).queues));
    let error = crate::from_options(Path::new("bench"), &options[..2]).unwrap_err();
    assert!(error.to_string().starts_with("bench"), "{error}");
}

#[test]
fn measure_marks_an_open_loop_probe_queue() {
    let c = ini(&format!(
        "{MINIMAL}[phantom-probe]\nrps_schedule = const(5,1s)\nmeasure = 1\n"
    ));
    assert!(!c.queues[0].measure);
    assert!(c.queues[1].measure);
}

#[test]
fn measure_without_an_rps_schedule_is_an_error_at_its_line() {
    let e = ini_err(
        "[phantom]\naddress = 127.0.0.1:8080\nuris = /\ninstances_schedule = const(5,1s)\n\
         measure = 1\n",
    );
    assert_eq!(e.key(), Some("measure"));
    assert!(
        e.to_string().starts_with("load.ini:5: [phantom] measure:"),
        "{e}"
    );
    assert!(e.message().contains("needs an rps_schedule"), "{e}");
}

const REPLAY: &str =
    "[phantom]\naddress = 127.0.0.1:8080\nammo_type = sessions\nammofile = capture.sessions\n";

#[test]
fn a_sessions_queue_replays_with_the_defaults() {
    let q = &ini(REPLAY).queues[0];
    assert_eq!(
        q.load_profile,
        LoadProfile::Replay(crate::Replay::default())
    );
    assert_eq!(q.load_profile_at.key(), "ammo_type");
    assert!(!q.places.is_written("instances"));
    let c = ini(&format!(
        "{REPLAY}replay_speed = 2.5\nreplay_connections = per_request\n\
         replay_skip = 3\nreplay_offset = 2\ninstances = 7\n"
    ));
    let q = &c.queues[0];
    assert_eq!(
        q.load_profile,
        LoadProfile::Replay(crate::Replay {
            speed: 2.5,
            connections: crate::ReplayConnections::PerRequest,
            skip: 3,
            offset: 2,
        })
    );
    assert!(q.places.is_written("instances"));
}

#[test]
fn a_replay_with_a_schedule_is_an_error_at_the_schedule() {
    let e = ini_err(&format!("{REPLAY}rps_schedule = const(1,1s)\n"));
    assert_eq!((e.line(), e.key()), (Some(5), Some("rps_schedule")));
    assert!(e.message().contains("replay_speed"), "{e}");
    let e = ini_err(&format!("{REPLAY}instances_schedule = const(1,1s)\n"));
    assert_eq!(e.key(), Some("instances_schedule"));
}

#[test]
fn replay_options_elsewhere_and_bad_values_are_located_errors() {
    let e = ini_err(&format!("{MINIMAL}replay_speed = 2\n"));
    assert_eq!((e.line(), e.key()), (Some(5), Some("replay_speed")));
    assert!(e.message().contains("ammo_type = sessions"), "{e}");
    for (line, key, needle) in [
        ("replay_speed = 0", "replay_speed", "above 0"),
        ("replay_speed = fast", "replay_speed", "above 0"),
        (
            "replay_connections = pooled",
            "replay_connections",
            "per_request",
        ),
        ("replay_skip = 0", "replay_skip", "at least 1"),
        ("replay_offset = 1", "replay_offset", "from 0 to 0"),
    ] {
        let e = ini_err(&format!("{REPLAY}{line}\n"));
        assert_eq!((e.line(), e.key()), (Some(5), Some(key)), "{line}");
        assert!(e.message().contains(needle), "{line}: {e}");
    }
    let e = ini_err(&format!("{REPLAY}chosen_cases = a b\n"));
    assert_eq!((e.line(), e.key()), (Some(5), Some("chosen_cases")));
    let e = ini_err(&format!("{REPLAY}tank_type = memcached\ndepth = 4\n"));
    assert_eq!(e.key(), Some("depth"));
    let e = ini_err("[phantom]\naddress = a\nammo_type = sessions\nuris = /\n");
    assert!(e.message().contains("needs `ammofile`"), "{e}");
}

#[test]
fn arrivals_are_read_with_their_seed_and_located_when_wrong() {
    let c = ini("[phantom]\naddress = h\nrps_schedule = const(1,1s)\nuris = /\narrivals = poisson\narrivals_seed = 7\n");
    assert_eq!(
        c.queues[0].arrivals,
        crate::Arrivals {
            process: crate::ArrivalProcess::Poisson,
            seed: 7,
            seed_chosen: false
        }
    );
    let drawn = ini(MINIMAL);
    assert!(drawn.queues[0].arrivals.process.is_uniform());
    assert!(drawn.queues[0].arrivals.seed_chosen);
    let e = load_str(
        "[phantom]\naddress = h\nrps_schedule = const(1,1s)\nuris = /\narrivals = pareto(0,1,1)\n",
        ConfigFormat::Ini,
        Path::new("l.ini"),
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "l.ini:5: [phantom] arrivals: in `pareto(0,1,1)`, the shape must be below 1 (else the mean gap is infinite)"
    );
    let e = load_str(
        "[phantom]\naddress = h\ninstances_schedule = const(1,1s)\nuris = /\narrivals = poisson\n",
        ConfigFormat::Ini,
        Path::new("l.ini"),
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with(
            "l.ini:5: [phantom] arrivals: `arrivals` spaces the shots of an rps_schedule"
        ),
        "{e}"
    );
}

#[test]
fn a_search_section_is_read_and_its_mistakes_located() {
    let c = ini(&format!(
        "{MINIMAL}[search]\nquantile = 99.9\nunder = 5ms\nfrom = 100\nto = 3000\nprecision = 2%\n\
         rate = 100:1000:100\nprobe = 20s\nwarmup = 5s\ninstances = 64\nmax_errors = 1\n\
         max_lag = 1ms\narrivals = poisson\npeak_connections = 32\n"
    ));
    let ms = std::time::Duration::from_millis;
    assert_eq!(
        c.search,
        crate::SearchConfig {
            quantile: Some(99.9),
            under: Some(ms(5)),
            from: Some(100),
            to: Some(3000),
            precision: Some(0.02),
            peak_connections: Some(32),
            rate: Some((100, 1000, 100)),
            probe: Some(ms(20_000)),
            warmup: Some(ms(5_000)),
            instances: Some(64),
            max_errors: Some(1.0),
            max_lag: Some(ms(1)),
            arrivals: Some(crate::ArrivalProcess::Poisson),
        }
    );
    assert_eq!(ini(MINIMAL).search, crate::SearchConfig::default());
    let error = |search: &str| {
        load_str(
            &format!("{MINIMAL}[search]\n{search}"),
            ConfigFormat::Ini,
            Path::new("l.ini"),
            &[],
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        error("quantil = 99\n"),
        "l.ini:6: [search] quantil: unknown option (did you mean `quantile`?)"
    );
    assert_eq!(
        error("under = 5 ms\n"),
        "l.ini:6: [search] under: `5 ms`: expected a duration like 10s, 500ms or 2m"
    );
    assert_eq!(
        error("from = 500\nto = 100\n"),
        "l.ini:7: [search] to: `to` 100 must be above `from` 500"
    );
}

#[test]
fn http2_queues_take_connections_and_grpc_queues_a_schema() {
    let c = ini(
        "[phantom]\naddress = h:80\ntank_type = http2\nconnections = 4\nuris = /\n\
         rps_schedule = const(1,1s)\n",
    );
    assert_eq!(
        (c.queues[0].tank_type, c.queues[0].connections),
        (TankType::Http2, Some(4))
    );
    assert_eq!(c.queues[0].grpc, None);
    let c = ini(
        "[phantom]\naddress = h:80\ntank_type = grpc\nammofile = calls.jsonl\n\
         rps_schedule = const(1,1s)\n[grpc]\nproto = a.proto b.proto\nimport_paths = inc\n\
         authority = api:443\n",
    );
    let q = &c.queues[0];
    assert_eq!(
        q.ammo,
        Some(AmmoSource::File {
            path: "calls.jsonl".into(),
            ammo_type: AmmoType::GrpcJson
        })
    );
    let grpc = q.grpc.as_ref().unwrap();
    assert_eq!(
        grpc.schema,
        crate::GrpcSchema::Protos {
            files: vec!["a.proto".into(), "b.proto".into()],
            import_paths: vec!["inc".into()],
        }
    );
    assert_eq!(grpc.authority.as_deref(), Some("api:443"));
    // Without [grpc], the server's reflection.
    let c = ini(
        "[phantom]\naddress = h:80\ntank_type = grpc\nammofile = c.jsonl\n\
         rps_schedule = const(1,1s)\n",
    );
    assert_eq!(
        c.queues[0].grpc.as_ref().unwrap().schema,
        crate::GrpcSchema::Reflection
    );
}

#[test]
fn http2_and_grpc_options_where_they_do_not_belong_are_errors() {
    let cases = [
        (
            "[phantom]\naddress = h\nconnections = 2\nuris = /\nrps_schedule = const(1,1s)\n",
            "only `tank_type = http2` or `grpc` has them",
        ),
        (
            "[phantom]\naddress = h\ntank_type = grpc\nuris = /\nrps_schedule = const(1,1s)\n",
            "reads Pandora's `grpc/json` ammo",
        ),
        (
            "[phantom]\naddress = h\nammofile = a\nammo_type = grpc/json\n\
             rps_schedule = const(1,1s)\n",
            "expected `tank_type = grpc`",
        ),
        (
            "[phantom]\naddress = h\nuris = /\nrps_schedule = const(1,1s)\n[grpc]\nproto = a.proto\n",
            "no queue uses this schema",
        ),
        (
            "[phantom]\naddress = h\ntank_type = grpc\nammofile = a\n\
             rps_schedule = const(1,1s)\n[grpc]\nprotos = a.proto\n",
            "did you mean `proto`?",
        ),
        (
            "[phantom]\naddress = h\ntank_type = grpc\nammofile = a\n\
             rps_schedule = const(1,1s)\n[grpc]\nimport_paths = inc\n",
            "expected `proto` too",
        ),
        (
            "[phantom]\naddress = h\ntank_type = http3\nuris = /\nrps_schedule = const(1,1s)\n",
            "expected `http`, `http2`, `grpc`, `none` (or `tcp`), `memcached` or `mysql`",
        ),
    ];
    for (text, expected) in cases {
        let error = crate::load_str(text, ConfigFormat::Ini, Path::new("load.ini"), &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{text}: {error}");
        assert!(error.starts_with("load.ini:"), "{error}");
    }
}

#[test]
fn a_yaml_section_written_twice_is_the_last_one_alone_and_said() {
    let c = yaml(
        "phantom:\n  address: 127.0.0.1:1\n  loop: 1\n  ammofile: a.log\n\
         phantom:\n  address: 127.0.0.1:2\n  uris: ['/', '/buy']\n  \
         load_profile: {load_type: rps, schedule: 'const(2, 5s)'}\n",
    );
    let q = &c.queues[0];
    // Nothing of the first block leaks in: no loop limit, no ammofile to clash with uris.
    assert_eq!((q.loop_count, q.address.as_str()), (-1, "127.0.0.1:2"));
    assert!(matches!(q.ammo, Some(AmmoSource::Uris(_))), "{:?}", q.ammo);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert!(
        c.warnings[0].starts_with("load.yaml:5: [phantom]: `phantom:` is written twice")
            && c.warnings[0].contains("replaces the one on line 1"),
        "{:?}",
        c.warnings
    );
}

#[test]
fn a_config_for_another_generator_says_which_and_that_tank_does_not_run_it() {
    let e = load_str(
        "phantom:\n  enabled: false\npandora:\n  enabled: true\n  config_file: p.yaml\n",
        ConfigFormat::Yaml,
        Path::new("load.yaml"),
        &[],
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("phantom is disabled: nothing to run. The test here is [pandora]'s (line 3)")
            && text.contains("yandex-tank's Pandora gun, which tank does not run"),
        "{text}"
    );
    let e = ini_err("[tank]\nplugin_phantom =\n[bfg]\ngun_type = ultimate\n");
    assert!(
        e.to_string().contains(
            "no [phantom] section (YAML: phantom:): nothing to run. The test here is [bfg]'s"
        ),
        "{e}"
    );
    // Nothing else to point at: the message stays short.
    let e = ini_err("[autostop]\nautostop = time(1s,1s)\n");
    assert!(e.to_string().ends_with("nothing to run"), "{e}");
}

#[test]
fn core_locks_foreign_plugins_and_aggregator_options_are_said_not_silent() {
    let c = ini(&format!(
        "{MINIMAL}[tank]\nlock_dir = /var/lock\nplugin_phantom = yandextank.plugins.Phantom\n\
         plugin_uploader = Tank/Plugins/DataUploader.py\nplugin_web = yatank_OnlineReport\n\
         plugin_overload = yandextank.plugins.DataUploader overload\n\
         [aggregator]\ntime_periods = 1ms 2 3\n"
    ));
    let said = c.warnings.join("\n");
    assert_eq!(c.warnings.len(), 3, "{said}");
    assert!(
        said.contains("[tank] lock_dir: tank takes no lock"),
        "{said}"
    );
    assert!(
        said.contains("[tank] plugin_web: tank loads no yandex-tank plugins: `yatank_OnlineReport` is not run"),
        "{said}"
    );
    assert!(
        said.contains("[aggregator] time_periods: tank aggregates with its own fixed settings"),
        "{said}"
    );
}

#[test]
fn an_error_in_a_value_with_a_comment_after_it_says_the_comment_is_in_it() {
    let e = ini_err(
        "[phantom]\naddress = 127.0.0.1\nport = 8080 ;target\nrps_schedule = const(1,1s)\nammofile = a\n",
    );
    assert!(
        e.to_string()
            .contains("(`;target` is part of the value: there are no comments after a value (INI)"),
        "{e}"
    );
}

#[test]
fn a_later_error_about_a_schedule_with_a_comment_after_it_says_the_comment_is_in_it() {
    // The plan parses the schedule; its error comes through the option's place.
    let c = ini(
        "[phantom]\naddress = h:1\nrps_schedule = line(1, 10, 1m) ;load scheme\nammofile = a\n",
    );
    let e = c.queues[0]
        .load_profile_at
        .error("step `;load scheme)`: bad");
    assert!(
        e.to_string().contains(
            "step `;load scheme)`: bad (`;load scheme` is part of the value: there are no comments"
        ),
        "{e}"
    );
}
