//! The process resource limits (RLIMIT_NOFILE) a run needs: one open file per instance.

use crate::RunError;

/// File descriptors kept free beyond one per instance (logs, ammo, runtime).
const SPARE_FILES: u64 = 64;

/// Raise the open-files limit to the hard limit, and fail clearly when even
/// that cannot hold one connection per instance.
pub fn raise_file_limit(instances: u64) -> Result<(), RunError> {
    let needed = instances + SPARE_FILES;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(());
    }
    if limit.rlim_max < needed {
        return Err(RunError::OpenFiles(format!(
            "the test needs {needed} open files (one per instance, plus {SPARE_FILES}), but the hard limit is {}: \
             lower `instances` or raise the limit (ulimit -Hn)",
            limit.rlim_max
        )));
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 && limit.rlim_cur < needed
        {
            return Err(RunError::OpenFiles(format!(
                "cannot raise the open-files limit to {needed}: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}
