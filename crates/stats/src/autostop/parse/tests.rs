//! Criteria as yandex-tank reads them, and refusals that name what is wrong.

use super::*;
use proptest::prelude::*;

#[test]
fn reads_every_criterion() {
    let http = parse("HTTP(5xx, 10%, 3s, search)").unwrap();
    assert_eq!(
        http.kind,
        Kind::Http {
            mask: CodeMask("5xx".into()),
            level: Level::Percent(10.0),
            dur_s: 3
        }
    );
    assert_eq!(http.tag.as_deref(), Some("search"));
    assert_eq!(
        parse("time(1s,10s)").unwrap().kind,
        Kind::Time {
            rt_ms: 1000,
            dur_s: 10
        }
    );
    assert_eq!(
        parse("time(300,1m)").unwrap().kind,
        Kind::Time {
            rt_ms: 300,
            dur_s: 60
        }
    );
    assert_eq!(
        parse("quantile(99.5,500ms,5)").unwrap().kind,
        Kind::Quantile {
            per_mille: 995,
            rt_ms: 500,
            dur_s: 5
        }
    );
    assert_eq!(
        parse("limit(1h1m)").unwrap().kind,
        Kind::Limit { dur_s: 3660 }
    );
    assert_eq!(
        parse("instances(80%,10s)").unwrap().kind,
        Kind::Instances {
            level: Level::Percent(80.0),
            dur_s: 10
        }
    );
    assert_eq!(
        parse("total_time(300ms,70%,3s)").unwrap().kind,
        Kind::TotalTime {
            rt_ms: 300,
            ratio: 0.7,
            window_s: 3
        }
    );
    assert!(matches!(
        parse("total_net(110,5,10s)").unwrap().kind,
        Kind::TotalNet {
            level: Level::Count(5),
            window_s: 10,
            ..
        }
    ));
    assert!(matches!(
        parse("negative_http(2xx,10%,10s)").unwrap().kind,
        Kind::NegativeHttp { .. }
    ));
    assert!(matches!(
        parse("negative_net(0,10%,10s)").unwrap().kind,
        Kind::NegativeNet { .. }
    ));
    assert!(matches!(
        parse("total_http(5xx,10,10s)").unwrap().kind,
        Kind::TotalHttp { .. }
    ));
    assert_eq!(
        parse("http_trend(2xx,10s)").unwrap().kind,
        Kind::HttpTrend {
            mask: CodeMask("2xx".into()),
            window_s: 10
        }
    );
    assert_eq!(
        parse("steady_cumulative(30s)").unwrap().kind,
        Kind::SteadyCumulative { dur_s: 30 }
    );
}

#[test]
fn durations_truncate_to_whole_seconds_like_the_reference() {
    assert_eq!(
        parse("limit(1500ms)").unwrap().kind,
        Kind::Limit { dur_s: 1 }
    );
}

#[test]
fn errors_name_the_criterion_and_what_was_expected() {
    let e = parse("http(5xx,10%)").unwrap_err();
    assert_eq!(e.criterion, "http(5xx,10%)");
    assert!(
        e.problem.contains("http(MASK, LEVEL, DURATION[, TAG])"),
        "{e}"
    );
    let e = parse("time(1.5s,10s)").unwrap_err();
    assert!(e.problem.contains("parameter 1 (response time)"), "{e}");
    let e = parse("quantile(97,1s,1s)").unwrap_err();
    assert!(e.problem.contains("99.5"), "{e}");
    let e = parse("speed(1)").unwrap_err();
    assert!(e.problem.contains("unknown criterion `speed`"), "{e}");
    assert!(parse("metric_higher(a,b,high,1)")
        .unwrap_err()
        .problem
        .contains("parameter 3 (value)"));
    assert!(parse("metric_lower(a,b,1)")
        .unwrap_err()
        .problem
        .contains("metric_lower(HOST, METRIC, VALUE, DURATION)"));
    assert!(parse("http(5yy,1,1)")
        .unwrap_err()
        .problem
        .contains("code mask"));
    assert!(parse("http(5xx,ten,1)")
        .unwrap_err()
        .problem
        .contains("level"));
    assert!(parse("limit(10q)")
        .unwrap_err()
        .problem
        .contains("unknown unit `q`"));
    assert!(parse("limit 10")
        .unwrap_err()
        .problem
        .contains("name(parameters)"));
    assert!(parse("limit(10")
        .unwrap_err()
        .problem
        .contains("missing `)`"));
    assert!(parse("total_time(1s,7,3s)")
        .unwrap_err()
        .problem
        .contains("percentage"));
}

#[test]
fn masks_match_codes_of_their_length_digit_by_digit() {
    let mask = parse_mask("5XX").unwrap();
    assert!(mask.matches(503) && mask.matches(500));
    assert!(!mask.matches(50) && !mask.matches(404) && !mask.matches(5000));
    assert!(parse_mask("2x0").unwrap().matches(210));
    assert!(parse_mask("110").unwrap().matches(110));
    assert!(!parse_mask("0").unwrap().matches(10));
}

/// The kind each criterion name gives.
fn name_of(kind: &Kind) -> &'static str {
    match kind {
        Kind::Time { .. } => "time",
        Kind::Http { .. } => "http",
        Kind::Net { .. } => "net",
        Kind::Quantile { .. } => "quantile",
        Kind::Limit { .. } => "limit",
        Kind::Instances { .. } => "instances",
        Kind::TotalTime { .. } => "total_time",
        Kind::TotalHttp { .. } => "total_http",
        Kind::TotalNet { .. } => "total_net",
        Kind::NegativeHttp { .. } => "negative_http",
        Kind::NegativeNet { .. } => "negative_net",
        Kind::HttpTrend { .. } => "http_trend",
        Kind::SteadyCumulative { .. } => "steady_cumulative",
        Kind::MetricHigher(_) => "metric_higher",
        Kind::MetricLower(_) => "metric_lower",
    }
}

/// A criterion is read as written, or refused naming it, the parameter at
/// fault (one that exists) and what was expected.
fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(criterion) => {
            prop_assert_eq!(&criterion.text, text.trim());
            let name = text
                .split('(')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            prop_assert_eq!(name_of(&criterion.kind), name);
        }
        Err(error) => {
            prop_assert_eq!(&error.criterion, text);
            prop_assert!(!error.problem.is_empty());
            if let Some(rest) = error.problem.strip_prefix("parameter ") {
                let n: usize = rest
                    .split(' ')
                    .next()
                    .unwrap_or_default()
                    .parse()
                    .unwrap_or(0);
                let inside = text
                    .split_once('(')
                    .and_then(|(_, r)| r.split_once(')'))
                    .map_or("", |(i, _)| i);
                prop_assert!((1..=inside.split(',').count()).contains(&n), "{}", error);
            }
        }
    }
    Ok(())
}

/// What a criterion's parameter is.
#[derive(Debug, Clone, Copy)]
enum Param {
    Mask,
    Level,
    Time,
    Quantile,
    Ratio,
}

/// Criteria near the syntax: every criterion with its own parameters (each
/// now and then replaced by one at or past what it takes), in any case,
/// with or without a tag, a `)`, or junk after it.
fn criterion_text() -> impl Strategy<Value = String> {
    use Param::*;
    const JUNK: &[&str] = &[
        "5yy",
        "123456",
        "-1",
        "1e3%",
        "ten",
        "1.5s",
        "10q",
        "99999999999999999999w",
        "",
        " ",
        "97",
        "7",
        "search",
    ];
    let forms: Vec<(&str, Vec<Param>)> = vec![
        ("time", vec![Time, Time]),
        ("http", vec![Mask, Level, Time]),
        ("net", vec![Mask, Level, Time]),
        ("quantile", vec![Quantile, Time, Time]),
        ("limit", vec![Time]),
        ("instances", vec![Level, Time]),
        ("total_time", vec![Time, Ratio, Time]),
        ("total_http", vec![Mask, Level, Time]),
        ("total_net", vec![Mask, Level, Time]),
        ("negative_http", vec![Mask, Level, Time]),
        ("negative_net", vec![Mask, Level, Time]),
        ("http_trend", vec![Mask, Time]),
        ("steady_cumulative", vec![Time]),
        ("metric_higher", vec![Time, Time, Time, Time]),
    ];
    let pick = |pool: &'static [&'static str]| {
        prop_oneof![
            6 => proptest::sample::select(pool),
            1 => proptest::sample::select(JUNK),
        ]
    };
    let drawn = (
        pick(&["5xx", "2x0", "404", "xx", "0"]),
        pick(&["10%", "5", "0", "100.5%"]),
        pick(&["1s", "500ms", "1m30s", "3", "1h1m"]),
        pick(&["95", "99.5", "50", "100"]),
        pick(&["70%", "0%"]),
    );
    (
        proptest::sample::select(forms),
        proptest::collection::vec(drawn, 4),
        proptest::sample::select(vec!["", "", ", search", ", x, y"]),
        proptest::sample::select(vec![",", ",", ", ", " , "]),
        proptest::sample::select(vec![")", ")", ")", ")", ") tail", "", "))"]),
        proptest::sample::select(vec![false, false, false, true]),
    )
        .prop_map(|((name, params), drawn, tag, comma, close, upper)| {
            let params: Vec<&str> = params
                .iter()
                .zip(&drawn)
                .map(
                    |(param, (mask, level, time, quantile, ratio))| match param {
                        Mask => *mask,
                        Level => *level,
                        Time => *time,
                        Quantile => *quantile,
                        Ratio => *ratio,
                    },
                )
                .collect();
            let name = if upper {
                name.to_ascii_uppercase()
            } else {
                name.to_owned()
            };
            format!("{name}({}{tag}{close}", params.join(comma))
        })
}

proptest! {
    #[test]
    fn any_text_is_read_or_refused_naming_the_criterion(text in "\\PC{0,40}") {
        check(&text)?;
    }

    #[test]
    fn near_valid_criteria_are_read_or_refused_naming_the_parameter(text in criterion_text()) {
        check(&text)?;
    }

    #[test]
    fn well_formed_criteria_round_trip(code in 1u16..6, level in 0u64..1000, dur in 0u64..100_000, pct in proptest::bool::ANY) {
        let level_text = if pct { format!("{level}%") } else { level.to_string() };
        let c = parse(&format!("http({code}xx,{level_text},{dur}s)")).unwrap();
        let want = if pct { Level::Percent(level as f64) } else { Level::Count(level) };
        prop_assert_eq!(c.kind, Kind::Http { mask: CodeMask(format!("{code}xx")), level: want, dur_s: dur });
    }

    #[test]
    fn times_add_up(h in 0u64..100, m in 0u64..100, s in 0u64..100, ms in 0u64..1000) {
        prop_assert_eq!(expand(&format!("{h}h{m}m{s}s{ms}ms"), "s").unwrap(), ((h * 60 + m) * 60 + s) * 1000 + ms);
    }
}
