//! Printing that a closed pipe cannot kill.
//!
//! `println!` panics when stdout is a pipe whose reader has gone
//! (`tank -c load.ini -q | head -1`): the panic took down the thread that
//! printed, and with it the run's results. Every line tank prints goes through
//! [`write`] instead (by way of the `out!`, `outln!`, `err!` and `errln!`
//! macros): once a stream fails, the rest of what would go to it is dropped and
//! the command carries on, so a test still runs to its end and writes every
//! artifact, and `tank plan | head` still ends as it would have. main.rs denies
//! clippy's `print_stdout` and `print_stderr`, so no print can bypass this.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// A stream tank prints to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output: results, tables, manifests.
    Stdout,
    /// Standard error: warnings, progress, errors.
    Stderr,
}

/// Set once a write to the stream failed: what follows is dropped.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);
static STDERR_FAILED: AtomicBool = AtomicBool::new(false);

/// Write `args` to `stream` and flush it, unless an earlier write to it
/// failed. A failure other than a closed pipe (a full disk behind `>`) is
/// said once on stderr; a closed pipe is what `| head` does, and is silent.
pub fn write(stream: Stream, args: fmt::Arguments<'_>) {
    let (failed, result) = match stream {
        Stream::Stdout => (&STDOUT_FAILED, write_to(io::stdout().lock(), args)),
        Stream::Stderr => (&STDERR_FAILED, write_to(io::stderr().lock(), args)),
    };
    if let Err(error) = result {
        if !failed.swap(true, Ordering::Relaxed)
            && stream == Stream::Stdout
            && error.kind() != io::ErrorKind::BrokenPipe
        {
            write(
                Stream::Stderr,
                format_args!("tank: stdout: {error}; the rest of the output is dropped\n"),
            );
        }
    }
}

fn write_to(mut stream: impl Write, args: fmt::Arguments<'_>) -> io::Result<()> {
    stream.write_fmt(args)?;
    stream.flush()
}

/// `print!` to stdout, dropped once stdout is closed.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write($crate::out::Stream::Stdout, format_args!($($arg)*))
    };
}

/// `println!` to stdout, dropped once stdout is closed.
macro_rules! outln {
    () => {
        $crate::out::write($crate::out::Stream::Stdout, format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(
            $crate::out::Stream::Stdout,
            format_args!("{}\n", format_args!($($arg)*)),
        )
    };
}

/// `eprint!`, dropped once stderr is closed.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::out::write($crate::out::Stream::Stderr, format_args!($($arg)*))
    };
}

/// `eprintln!`, dropped once stderr is closed.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::write(
            $crate::out::Stream::Stderr,
            format_args!("{}\n", format_args!($($arg)*)),
        )
    };
}
