//! The dashboard's page: one self-contained HTML document (its style and
//! scripts inline, no CDN, no fonts, no other network), drawing with the
//! chart code report.html uses.

use tank_report::html::{escape, script, STYLE};

use crate::PageMeta;

const LIVE_SCRIPT: &str = include_str!("live.js");
const LIVE_STYLE: &str = "\
header #facts, header #description { margin: 4px 0 0; color: #cfd8dc; }\n\
#status { padding: 8px 24px; background: #eceff1; font-weight: 600; }\n\
#status.live { background: #e8f5e9; color: #1b5e20; }\n\
#status.over { background: #e3f2fd; color: #0d47a1; }\n\
#status.lost { background: #fff3e0; color: #e65100; }\n\
#run { color: #90a4ae; margin-top: 4px; }\n\
pre { white-space: pre-wrap; font-size: 12px; }\n\
#now { display: flex; flex-wrap: wrap; gap: 0 16px; align-items: flex-start; }\n\
#now section { flex: 1 1 300px; }\n";

/// The page of a dashboard about `meta` (the data comes by events).
pub(crate) fn html(meta: &PageMeta) -> String {
    let title = meta.job.job_name.as_deref().unwrap_or(&meta.title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>tank live — {title}</title>\n<style>\n{STYLE}{LIVE_STYLE}</style>\n</head>\n<body>\n\
         <header><h1 id=\"title\">{title}</h1><p id=\"facts\"></p><p id=\"description\"></p>\
         <div id=\"run\"></div></header>\n<div id=\"status\"></div>\n\
         <main id=\"content\"><div id=\"now\"></div><div id=\"charts\"></div><div id=\"tables\"></div></main>\n\
         <script>\n{script}</script>\n</body>\n</html>\n",
        title = escape(title),
        script = script(LIVE_SCRIPT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained_and_escapes_its_title() {
        let meta = PageMeta {
            title: "tank -c <load>.ini".into(),
            ..PageMeta::default()
        };
        let page = html(&meta);
        assert!(page.contains("tank -c &lt;load&gt;.ini"));
        assert!(!page.contains(" src="), "no external scripts");
        assert!(!page.contains("https://"), "no external assets");
        assert_eq!(
            page.matches("http://").count(),
            page.matches("http://www.w3.org/2000/svg").count(),
            "the only URL is the SVG namespace's name"
        );
        assert_eq!(page.matches("<script").count(), 1);
    }
}
