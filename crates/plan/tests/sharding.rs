//! Shards end to end: the union of every shard's shots is the whole plan, shot
//! for shot (index, due time, tag and bytes), whatever the schedule and ammo.

use std::path::Path;

use proptest::prelude::*;
use tank_config::{load_str, ConfigFormat, QueueConfig};
use tank_plan::{Plan, Shard};

type Shot = (u64, i64, Vec<u8>, Vec<u8>);

fn queue(dir: &Path, options: &str) -> QueueConfig {
    let ammo = dir.join("ammo");
    std::fs::write(&ammo, "/a\n/b\n/c\n[Host: x]\n/d\n").expect("write ammo");
    let text = format!(
        "[phantom]\naddress = 127.0.0.1:80\nammofile = {}\n{options}\n",
        ammo.display()
    );
    let config = load_str(&text, ConfigFormat::Ini, Path::new("test.ini"), &[]).expect("config");
    config.queues.into_iter().next().expect("one queue")
}

fn shots(queue: &QueueConfig, shard: Shard) -> Vec<Shot> {
    let mut plan = Plan::new(queue).expect("plan").shard(shard);
    let mut out = Vec::new();
    while let Some(shot) = plan.next_shot().expect("shot") {
        out.push((
            shot.seq,
            shot.due_ms,
            shot.marker.to_vec(),
            shot.missile.to_vec(),
        ));
    }
    out
}

#[test]
fn a_shard_fires_every_nth_shot_from_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let queue = queue(dir.path(), "rps_schedule = const(10,1s)");
    let second = shots(&queue, Shard::parse("1/3").unwrap());
    let seqs: Vec<u64> = second.iter().map(|s| s.0).collect();
    let dues: Vec<i64> = second.iter().map(|s| s.1).collect();
    assert_eq!(seqs, vec![1, 4, 7]);
    assert_eq!(dues, vec![100, 400, 700]);
    let plan = Plan::new(&queue)
        .unwrap()
        .shard(Shard::parse("1/3").unwrap());
    let planned = plan
        .planned_count()
        .expect("an rps plan over looped ammo has a known count");
    assert_eq!(planned.total(), 3);
    assert_eq!(planned.whole_len(), 10);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Sharding partitions the plan: merged by index, the shards' shots are the
    /// whole plan's, also under loop and ammo limits, instances schedules and
    /// drawn arrivals with a seed.
    #[test]
    fn the_shards_partition_the_plan(
        shards in 1u64..7,
        rps in 1u32..60,
        secs in 1u32..4,
        limit in prop_oneof![Just(String::new()), (1u32..40).prop_map(|n| format!("ammo_limit = {n}")),
                             (1u32..4).prop_map(|n| format!("loop = {n}"))],
        instances in any::<bool>(),
        drawn in proptest::option::of(any::<u64>()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let schedule = if instances {
            format!("instances_schedule = line(1,{},{secs}s)\nloop = 2", rps + 1)
        } else {
            let arrivals = drawn.map_or(String::new(), |seed| {
                format!("arrivals = fb_ia\narrivals_seed = {seed}")
            });
            format!("rps_schedule = line(1,{rps},{secs}s)\n{limit}\n{arrivals}")
        };
        let queue = queue(dir.path(), &schedule);
        let whole = shots(&queue, Shard::WHOLE);
        let mut union: Vec<Shot> = (0..shards)
            .flat_map(|i| shots(&queue, Shard::new(i, shards).unwrap()))
            .collect();
        union.sort_by_key(|s| s.0);
        prop_assert_eq!(union, whole);
    }
}
