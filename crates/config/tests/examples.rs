//! Every file in the repository's `configs/` loads: they are what users copy.

use std::path::PathBuf;

use tank_config::{load, AmmoSource, ConfigFormat};

fn configs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

#[test]
fn every_example_config_loads() {
    let mut loaded = 0;
    let entries = std::fs::read_dir(configs_dir()).expect("configs/ exists");
    for entry in entries {
        let path = entry.expect("readable configs/ entry").path();
        if !path.is_file() {
            continue;
        }
        match load(&path, &[]) {
            Ok(config) => assert!(!config.queues.is_empty(), "{}", path.display()),
            Err(e) => panic!("{e}"),
        }
        loaded += 1;
    }
    assert!(loaded >= 6, "only {loaded} example configs found");
}

#[test]
fn example_ammo_paths_exist_relative_to_the_repository_root() {
    let root = configs_dir().join("..");
    for entry in std::fs::read_dir(configs_dir()).expect("configs/ exists") {
        let path = entry.expect("readable configs/ entry").path();
        let Ok(config) = load(&path, &[]) else {
            continue;
        };
        for queue in &config.queues {
            if let Some(AmmoSource::File { path: ammo, .. }) = &queue.ammo {
                assert!(
                    root.join(ammo).is_file(),
                    "{}: {}",
                    path.display(),
                    ammo.display()
                );
            }
        }
    }
}

#[test]
fn multi_examples_have_their_queues() {
    let multi = load(&configs_dir().join("multi.ini"), &[]).unwrap();
    assert_eq!(multi.queues.len(), 2);
    assert_eq!(multi.queues[1].address, "127.0.0.1:8080");
    let yaml = load(&configs_dir().join("load.yaml"), &[]).unwrap();
    assert_eq!(yaml.format, ConfigFormat::Yaml);
    let names: Vec<_> = yaml.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["phantom", "search", "posts"]);
}
