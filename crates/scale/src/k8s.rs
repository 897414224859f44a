//! Kubernetes manifests for a sharded test: a ConfigMap with the config (and the
//! ammo files small enough to travel in it), and an Indexed Job whose N pods each
//! run one shard with a common start. Kubernetes starts the processes; tank needs
//! no operator or controller of its own. Large ammo is read from a volume the user
//! fills (a PersistentVolumeClaim named `tank-ammo`), and every pod writes its
//! artifacts to the claim `tank-artifacts`, from which `tank merge` reads them.
//!
//! The YAML is written by hand with every string JSON-quoted (valid YAML), which
//! keeps the output exact without a YAML serializer.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Files up to this size go into the ConfigMap (its limit is 1 MiB in all).
pub const CONFIGMAP_FILE_LIMIT: u64 = 256 * 1024;
/// Kubernetes' limit on a ConfigMap's data.
pub const CONFIGMAP_LIMIT: usize = 1 << 20;
/// `kubectl apply` (client-side) keeps the whole object in an annotation,
/// which may hold this much.
pub const LAST_APPLIED_LIMIT: usize = 256 * 1024;
/// Where the ConfigMap is mounted in the pods.
pub const CONFIG_DIR: &str = "/etc/tank";
/// Where the large-ammo volume is mounted.
pub const AMMO_DIR: &str = "/ammo";
/// Where the artifacts volume is mounted.
pub const ARTIFACTS_DIR: &str = "/artifacts";

/// What to generate.
#[derive(Debug, Clone)]
pub struct K8sSpec {
    /// A name for the ConfigMap and the Job (DNS-1123: lower case, digits, `-`).
    pub name: String,
    /// The namespace.
    pub namespace: String,
    /// The container image with `tank` on its PATH.
    pub image: String,
    /// How many shards (pods).
    pub shards: u64,
    /// The common start, µs since the Unix epoch.
    pub start_at_us: u64,
    /// The config file.
    pub config: PathBuf,
    /// Each queue's section and ammo file, when it has one.
    pub ammo: Vec<(String, PathBuf)>,
    /// The monitoring section and the host-list file it reads, when it reads one.
    pub monitoring: Option<(String, PathBuf)>,
}

/// The manifests, and what to tell the user about them.
#[derive(Debug, Clone)]
pub struct Manifests {
    /// The YAML stream: the ConfigMap, then the Job.
    pub yaml: String,
    /// What may keep them from working as they are.
    pub warnings: Vec<String>,
}

/// An ammo file and where the pods find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The queue's section.
    pub section: String,
    /// The file on this machine.
    pub local: PathBuf,
    /// Its key in the ConfigMap, when it travels there.
    pub key: Option<String>,
    /// Its path in the pods.
    pub in_pod: String,
}

fn quote(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned())
}

/// Decide where each ammo file travels: small UTF-8 files in the ConfigMap,
/// the rest on the `tank-ammo` volume.
pub fn place_ammo(spec: &K8sSpec) -> Result<Vec<Placed>, String> {
    let mut placed: Vec<Placed> = Vec::new();
    if let Some((section, path)) = &spec.monitoring {
        // Read in the pods as in `tank -c` here; it travels in the ConfigMap.
        let len = std::fs::metadata(path)
            .map_err(|e| format!("[{section}] config {}: {e}", path.display()))?
            .len();
        if len > CONFIGMAP_FILE_LIMIT {
            return Err(format!(
                "[{section}] config {}: {len} bytes, more than the {CONFIGMAP_FILE_LIMIT} a \
                 file may take in the ConfigMap",
                path.display()
            ));
        }
        let key = format!("monitoring-{}", file_name(path));
        placed.push(Placed {
            section: section.clone(),
            local: path.clone(),
            in_pod: format!("{CONFIG_DIR}/{key}"),
            key: Some(key),
        });
    }
    for (section, path) in &spec.ammo {
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("[{section}] ammofile {}: {e}", path.display()))?;
        let name = file_name(path);
        let small = meta.len() <= CONFIGMAP_FILE_LIMIT
            && std::fs::read(path).is_ok_and(|bytes| std::str::from_utf8(&bytes).is_ok());
        let key = format!("ammo-{}-{name}", section.replace(['_', '.'], "-"));
        if !small {
            // Two files of one name would be one file on the volume.
            let same = |p: &PathBuf| std::fs::canonicalize(p).ok();
            if let Some(other) = placed.iter().find(|other| {
                other.key.is_none()
                    && other.in_pod == format!("{AMMO_DIR}/{name}")
                    && same(&other.local) != same(path)
            }) {
                return Err(format!(
                    "[{section}] ammofile {} and [{}] ammofile {} are both `{name}` on the \
                     tank-ammo volume ({AMMO_DIR}/{name}), where one would be fired as the \
                     other: give them different names",
                    path.display(),
                    other.section,
                    other.local.display()
                ));
            }
        }
        placed.push(if small {
            Placed {
                section: section.clone(),
                local: path.clone(),
                in_pod: format!("{CONFIG_DIR}/{key}"),
                key: Some(key),
            }
        } else {
            Placed {
                section: section.clone(),
                local: path.clone(),
                key: None,
                in_pod: format!("{AMMO_DIR}/{name}"),
            }
        });
    }
    Ok(placed)
}

/// The pod's command line, after `tank`: one shard, the common start, the
/// ammo where the pod has it, artifacts on the volume.
pub fn pod_args(spec: &K8sSpec, placed: &[Placed]) -> Vec<String> {
    let mut args = vec![
        "-c".to_owned(),
        format!("{CONFIG_DIR}/{}", file_name(&spec.config)),
        "--shard".to_owned(),
        format!("$(JOB_COMPLETION_INDEX)/{}", spec.shards),
        "--start-at".to_owned(),
        tank_run::time::format_rfc3339(spec.start_at_us),
        "--quiet".to_owned(),
        "-o".to_owned(),
        format!(
            "tank.artifacts_dir={ARTIFACTS_DIR}/{}/shard-$(JOB_COMPLETION_INDEX)",
            spec.name
        ),
    ];
    for file in placed {
        let key = if spec
            .monitoring
            .as_ref()
            .is_some_and(|(s, _)| *s == file.section)
        {
            "config"
        } else {
            "ammofile"
        };
        args.push("-o".to_owned());
        args.push(format!("{}.{key}={}", file.section, file.in_pod));
    }
    args
}

/// The manifests: the ConfigMap, then the Indexed Job, as one YAML stream.
pub fn manifests(spec: &K8sSpec) -> Result<Manifests, String> {
    let placed = place_ammo(spec)?;
    let config_text = std::fs::read_to_string(&spec.config)
        .map_err(|e| format!("{}: {e}", spec.config.display()))?;
    let (name, namespace) = (quote(&spec.name), quote(&spec.namespace));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# tank k8s: {} shards of {} starting at {}; apply before then.",
        spec.shards,
        spec.config.display(),
        tank_run::time::format_rfc3339(spec.start_at_us)
    );
    let _ = writeln!(out, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:");
    let _ = writeln!(
        out,
        "  {}: {}",
        quote(&file_name(&spec.config)),
        quote(&config_text)
    );
    let mut data = config_text.len();
    // As the annotation holds it: JSON, every `\r\n` and quote escaped.
    let mut encoded = quote(&config_text).len();
    for file in &placed {
        if let Some(key) = &file.key {
            let text = std::fs::read_to_string(&file.local)
                .map_err(|e| format!("{}: {e}", file.local.display()))?;
            data += text.len();
            encoded += quote(&text).len();
            let _ = writeln!(out, "  {}: {}", quote(key), quote(&text));
        }
    }
    if data > CONFIGMAP_LIMIT {
        return Err(format!(
            "the ConfigMap would hold {data} bytes (the config and the ammo files of up to \
             {CONFIGMAP_FILE_LIMIT} bytes), more than Kubernetes' {CONFIGMAP_LIMIT}: put the \
             larger ammo files on the tank-ammo volume (docs/kubernetes.md)"
        ));
    }
    let mut warnings = Vec::new();
    if encoded > LAST_APPLIED_LIMIT {
        warnings.push(format!(
            "the ConfigMap holds {encoded} bytes as JSON: `kubectl apply` keeps a copy in an \
             annotation of at most {LAST_APPLIED_LIMIT}, and refuses it; use `kubectl apply \
             --server-side` or `kubectl create`"
        ));
    }
    let large = placed.iter().any(|a| a.key.is_none());
    let _ = writeln!(
        out,
        "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec:\n  completionMode: Indexed\n  completions: {n}\n  parallelism: {n}\n  backoffLimit: 0\n\
         \x20 template:\n    metadata:\n      labels:\n        app: \"tank\"\n    spec:\n      restartPolicy: Never\n\
         \x20     containers:\n        - name: \"tank\"\n          image: {image}\n          command: [\"tank\"]\n\
         \x20         args:",
        n = spec.shards,
        image = quote(&spec.image),
    );
    for arg in pod_args(spec, &placed) {
        let _ = writeln!(out, "            - {}", quote(&arg));
    }
    let _ = writeln!(
        out,
        "          env:\n            - name: \"TANK_SHARDS\"\n              value: {}\n\
         \x20         volumeMounts:\n            - name: \"config\"\n              mountPath: {}\n\
         \x20           - name: \"artifacts\"\n              mountPath: {}",
        quote(&spec.shards.to_string()),
        quote(CONFIG_DIR),
        quote(ARTIFACTS_DIR)
    );
    if large {
        let _ = writeln!(out, "            - name: \"ammo\"\n              mountPath: {}\n              readOnly: true", quote(AMMO_DIR));
    }
    let _ = writeln!(
        out,
        "      volumes:\n        - name: \"config\"\n          configMap:\n            name: {name}\n\
         \x20       - name: \"artifacts\"\n          persistentVolumeClaim:\n            claimName: \"tank-artifacts\""
    );
    if large {
        let _ = writeln!(out, "        - name: \"ammo\"\n          persistentVolumeClaim:\n            claimName: \"tank-ammo\"\n            readOnly: true");
    }
    Ok(Manifests {
        yaml: out,
        warnings,
    })
}

/// A Dockerfile for an image with `tank` on its PATH, built from this repository.
pub const DOCKERFILE: &str = "\
# Build: docker build -t REGISTRY/tank:VERSION -f Dockerfile .   (from a clone of tank)
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin tank

FROM debian:bookworm-slim
# chrony's client lets each shard record its clock offset in shard.json.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates chrony \\
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/tank /usr/local/bin/tank
ENTRYPOINT []
CMD [\"tank\", \"--help\"]
";

/// Whether `name` is a DNS-1123 label (what Kubernetes takes as a name).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!("`{name}` is not a Kubernetes name: expected lower-case letters, digits and `-`, at most 63"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ammo_travels_in_the_configmap_and_the_job_is_indexed() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("load.ini");
        std::fs::write(
            &config,
            "[phantom]\naddress = target:80\nammofile = ammo.txt\n",
        )
        .unwrap();
        let ammo = dir.path().join("ammo.txt");
        std::fs::write(&ammo, "/a\n/b\n").unwrap();
        let spec = K8sSpec {
            name: "tank-test".into(),
            namespace: "load".into(),
            image: "registry/tank:1".into(),
            shards: 4,
            start_at_us: 1_748_779_200_000_000,
            config,
            ammo: vec![("phantom".into(), ammo)],
            monitoring: None,
        };
        let text = manifests(&spec).unwrap().yaml;
        assert!(
            text.contains("completionMode: Indexed\n  completions: 4\n  parallelism: 4"),
            "{text}"
        );
        assert!(
            text.contains("\"ammo-phantom-ammo.txt\": \"/a\\n/b\\n\""),
            "{text}"
        );
        assert!(text.contains("- \"$(JOB_COMPLETION_INDEX)/4\""), "{text}");
        assert!(text.contains("- \"2025-06-01T12:00:00.000000Z\""), "{text}");
        assert!(
            text.contains("- \"phantom.ammofile=/etc/tank/ammo-phantom-ammo.txt\""),
            "{text}"
        );
        assert!(!text.contains("tank-ammo"), "{text}");
        assert!(check_name("tank-test").is_ok());
        assert!(check_name("Tank").is_err());
    }
}
