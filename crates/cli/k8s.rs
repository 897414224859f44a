//! `tank k8s -c load.ini --shards N --image IMAGE`: print the Kubernetes
//! manifests that run the test as N shards of an Indexed Job (docs/kubernetes.md).

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Result};
use tank_config::{AmmoSource, Override};
use tank_scale::k8s::{self, K8sSpec};

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
    /// How many shards (pods).
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
    /// The common start, from now (s, m): time enough to apply the manifests
    /// and for every pod to be scheduled and pull the image.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    start_in: String,
    /// Print a Dockerfile for the image instead.
    #[arg(long)]
    dockerfile: bool,
}

/// Run `tank k8s`.
pub fn run(args: &K8sArgs) -> Result<()> {
    if args.dockerfile {
        print!("{}", k8s::DOCKERFILE);
        return Ok(());
    }
    let (Some(config_path), Some(image)) = (&args.config, &args.image) else {
        bail!("give -c FILE and --image IMAGE");
    };
    if args.shards == 0 {
        bail!("--shards 0: expected at least 1");
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
    if start_in_ms <= 0 {
        bail!(
            "--start-in {}: expected a positive duration like 60s",
            args.start_in
        );
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
    };
    print!("{}", k8s::manifests(&spec).map_err(|e| anyhow!(e))?);
    Ok(())
}
