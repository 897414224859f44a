//! `tank k8s -c load.ini --shards N --image IMAGE`: print the Kubernetes
//! manifests that run the test as N shards of an Indexed Job (docs/kubernetes.md).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Result};
use tank_config::{AmmoSource, Override};
use tank_scale::k8s::{self, K8sSpec};

/// The most shards: Kubernetes' limit on an Indexed Job's completions.
const MAX_SHARDS: u64 = 100_000;
/// The furthest common start: pods wait for it holding their resources, so
/// a start further off is a typo, not a plan.
const MAX_START_IN_MS: i64 = 7 * 24 * 3_600_000;

/// Arguments of `tank k8s`.
#[derive(Debug, clap::Args)]
pub struct K8sArgs {
    /// The config to run.
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present = "dockerfile"
    )]
    config: Option<PathBuf>,
    /// Not taken: the pods run the config as written (put options in the file).
    #[arg(
        short = 'o',
        long = "option",
        value_name = "SECTION.KEY=VALUE",
        hide = true
    )]
    overrides: Vec<Override>,
    /// How many shards (pods), at most 100000 (an Indexed Job's limit).
    #[arg(long, value_name = "N", default_value_t = 1)]
    shards: u64,
    /// The container image with tank on its PATH (see --dockerfile).
    #[arg(long, value_name = "IMAGE", required_unless_present = "dockerfile")]
    image: Option<String>,
    /// The namespace.
    #[arg(long, value_name = "NS", default_value = "default")]
    namespace: String,
    /// The name of the ConfigMap and the Job.
    #[arg(long, value_name = "NAME", default_value = "tank")]
    name: String,
    /// The common start, from now (s, m, h; at most 7 days): time enough to
    /// apply the manifests and for every pod to be scheduled and pull the image.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    start_in: String,
    /// Print a Dockerfile for the image instead.
    #[arg(long)]
    dockerfile: bool,
}

/// Run `tank k8s`.
pub fn run(args: &K8sArgs) -> Result<()> {
    if args.dockerfile {
        out!("{}", k8s::DOCKERFILE);
        return Ok(());
    }
    let (Some(config_path), Some(image)) = (&args.config, &args.image) else {
        bail!("give -c FILE and --image IMAGE");
    };
    if !(1..=MAX_SHARDS).contains(&args.shards) {
        bail!(
            "--shards {}: expected 1 to {MAX_SHARDS} (an Indexed Job's most completions)",
            args.shards
        );
    }
    k8s::check_name(&args.name).map_err(|e| anyhow!("--name: {e}"))?;
    k8s::check_name(&args.namespace).map_err(|e| anyhow!("--namespace: {e}"))?;
    if !args.overrides.is_empty() {
        bail!(
            "-o: the pods run the config as written; put the options in {} instead",
            config_path.display()
        );
    }
    let config = tank_config::load(config_path, &[])?;
    let start_in_ms = tank_plan::duration::parse_duration_ms(&args.start_in)
        .map_err(|e| anyhow!("--start-in: {e}"))?;
    if !(1..=MAX_START_IN_MS).contains(&start_in_ms) {
        bail!(
            "--start-in {}: expected a positive duration of at most 7 days, like 60s",
            args.start_in
        );
    }
    for queue in &config.queues {
        // Each pod would draw its own plan, and refuse to (tank -c --shard does).
        if args.shards > 1
            && queue.arrivals.seed_chosen
            && tank_plan::Plan::seed_note(queue).is_some()
        {
            bail!(
                "{}: [{}] the plan is drawn (its arrivals or its scenarios), and each shard \
                 would draw its own: expected `arrivals_seed` set, so every shard plans the \
                 same shots",
                config_path.display(),
                queue.name
            );
        }
        if is_loopback(&queue.address) {
            errln!(
                "tank: warning: {}: [{}] address {} is a loopback address: in a pod it is the \
                 pod itself, not this machine, so no shard reaches it; give an address the pods \
                 can reach (a Service's name, a cluster or node IP)",
                config_path.display(),
                queue.name,
                queue.address
            );
        }
    }
    // The exporters and monitoring on loopback are the pod itself.
    let mut pods_own = Vec::new();
    if let Some(influx) = &config.influx {
        if is_loopback(&influx.address) {
            pods_own.push(format!(
                "[influx] address {}: in a pod, the pod itself, where no InfluxDB is",
                influx.address
            ));
        }
    }
    if let Some(prometheus) = &config.prometheus {
        if prometheus.listen.ip().is_loopback() {
            pods_own.push(format!(
                "[prometheus] listen {}: in a pod, its own loopback, where no scraper reaches \
                 it (listen on 0.0.0.0:{})",
                prometheus.listen,
                prometheus.listen.port()
            ));
        }
    }
    if let Some(monitoring) = &config.monitoring {
        for host in monitoring.hosts.iter().filter(|h| is_loopback(&h.address)) {
            pods_own.push(format!(
                "[{}] host {}: in a pod, the pod itself, not the machine you mean",
                monitoring.section, host.address
            ));
        }
    }
    for what in pods_own {
        errln!("tank: warning: {}: {what}", config_path.display());
    }
    let now_us = SystemTime::now().duration_since(UNIX_EPOCH)?.as_micros() as u64;
    let ammo = config
        .queues
        .iter()
        .filter_map(|q| match &q.ammo {
            Some(AmmoSource::File { path, .. }) => Some((q.name.clone(), path.clone())),
            _ => None,
        })
        .collect();
    let spec = K8sSpec {
        name: args.name.clone(),
        namespace: args.namespace.clone(),
        image: image.clone(),
        shards: args.shards,
        start_at_us: now_us + start_in_ms.unsigned_abs() * 1000,
        config: config_path.clone(),
        ammo,
        monitoring: config.monitoring.as_ref().and_then(|m| {
            m.file
                .as_ref()
                .map(|file| (m.section.clone(), file.clone()))
        }),
    };
    let manifests = k8s::manifests(&spec).map_err(|e| anyhow!(e))?;
    for warning in &manifests.warnings {
        errln!("tank: warning: {warning}");
    }
    out!("{}", manifests.yaml);
    Ok(())
}

/// Whether `address` (`host[:port]`, `[ipv6]:port`) names this machine.
fn is_loopback(address: &str) -> bool {
    let host = match address.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None if address.matches(':').count() > 1 => address,
        None => address.split(':').next().unwrap_or(address),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::is_loopback;

    #[test]
    fn loopback_addresses_in_every_spelling_and_nothing_else() {
        for address in [
            "127.0.0.1:80",
            "127.1.2.3",
            "localhost:8080",
            "LocalHost.",
            "app.localhost:1",
            "[::1]:443",
            "::1",
            "0.0.0.0:80",
        ] {
            assert!(is_loopback(address), "{address}");
        }
        for address in [
            "10.0.0.1:80",
            "web:80",
            "[2001:db8::1]:80",
            "origin",
            "localhost-db:5432",
        ] {
            assert!(!is_loopback(address), "{address}");
        }
    }
}
