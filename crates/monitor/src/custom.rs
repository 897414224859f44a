//! `<Custom>` commands: run with `sh -c` on this machine, their output read as one number.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tank_config::CustomCommand;

use crate::reading::Reading;

/// yandex-tank's name for a custom command's value.
pub fn metric_name(command: &CustomCommand) -> String {
    format!("custom:{}_exec_value", command.label)
}

/// Runs `command` within `timeout` and adds its value to `reading` (a counter
/// when `diff`, so it becomes a change per second).
pub fn run(
    command: &CustomCommand,
    timeout: Duration,
    reading: &mut Reading,
) -> Result<(), String> {
    let value = output(&command.command, timeout)?;
    let name = metric_name(command);
    if command.diff {
        reading.counter(name, value);
    } else {
        reading.gauge(name, value);
    }
    Ok(())
}

fn output(command: &str, timeout: Duration) -> Result<f64, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("`{command}`: cannot start sh: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let result = stdout.read_to_string(&mut text).map(|_| text);
        let _ = tx.send(result);
    });
    let text = match rx.recv_timeout(timeout) {
        Ok(result) => result.map_err(|e| format!("`{command}`: {e}"))?,
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("`{command}` took longer than {timeout:?}; killed"));
        }
    };
    let status = child.wait().map_err(|e| format!("`{command}`: {e}"))?;
    if !status.success() {
        return Err(format!("`{command}` failed ({status})"));
    }
    let word = text.split_whitespace().next().unwrap_or_default();
    word.parse::<f64>().map_err(|_| {
        format!(
            "`{command}`: expected a number on stdout, found `{}`",
            text.trim().chars().take(40).collect::<String>()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn cmd(command: &str, diff: bool) -> CustomCommand {
        CustomCommand {
            command: command.into(),
            label: "x".into(),
            diff,
        }
    }

    #[test]
    fn a_command_gives_its_number() {
        let mut r = Reading::new(Instant::now());
        run(&cmd("echo 42.5", false), Duration::from_secs(5), &mut r).unwrap();
        assert_eq!(r.gauges["custom:x_exec_value"], 42.5);
        run(&cmd("echo 7", true), Duration::from_secs(5), &mut r).unwrap();
        assert_eq!(r.counters["custom:x_exec_value"].0, 7.0);
    }

    #[test]
    fn garbage_failure_and_slowness_are_errors() {
        let mut r = Reading::new(Instant::now());
        let t = Duration::from_secs(5);
        assert!(run(&cmd("echo hello", false), t, &mut r)
            .unwrap_err()
            .contains("expected a number"));
        assert!(run(&cmd("exit 3", false), t, &mut r)
            .unwrap_err()
            .contains("failed"));
        let started = Instant::now();
        let e = run(&cmd("sleep 5", false), Duration::from_millis(200), &mut r).unwrap_err();
        assert!(e.contains("killed"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(4));
    }
}
