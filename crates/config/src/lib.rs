//! tank-config: read a yandex-tank config in any of its spellings into one [`TestConfig`].
//!
//! Two stages, as ripgrep parses flags: first each spelling is read into a raw
//! section/key/value form that stays close to the file (so errors can name the
//! file, line, section and key), then that raw form is validated into the typed
//! model in [`model`]. INI values are converted exactly as yandex-tank's config
//! converter does (lists split on whitespace, `headers` by `[...]` groups,
//! booleans via `int()` or `true`), TOML and YAML values may be native types or
//! the same strings.

pub mod model;

pub use model::*;
