//! GPU against CPU filter kernel, in one run, over 150-byte records resident in host memory and
//! read from the page cache (issue #23's bench; docs/gpu.md).
//!
//! `cargo run --release -p hd-engine-core --example gpu_filter -- [GB] [ROUNDS]` (default 10 GB, 3
//! rounds). For each filter (selective, unselective, a wide IN list with a string prefix) it prints
//! GB/s for the CPU kernel on one core and on every core, and for the GPU (kernel from the
//! generated program, records in 64 MiB pinned chunks on two streams), with ratios. Medians of the
//! rounds. Without a GPU it prints the CPU figures and why the GPU column is empty.

use std::io::Write;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use hd_engine_core::gpu::GpuDevice;
use hd_engine_core::scan::ScanFilter;
use hd_engine_core::schema::parse;
use rayon::prelude::*;

const RS: usize = 150;
const CHUNK: usize = 16 << 20;

const SCHEMA: &str = r#"{ "id": "flows", "record_size": 150, "time_field": "ts", "fields": [
    { "name": "ts", "offset": 0, "size": 8, "type": "timestamp" },
    { "name": "src", "offset": 8, "size": 4, "type": "ipv4" },
    { "name": "dst", "offset": 12, "size": 4, "type": "ipv4" },
    { "name": "sport", "offset": 16, "size": 2, "type": "uint16" },
    { "name": "dport", "offset": 18, "size": 2, "type": "uint16" },
    { "name": "proto", "offset": 20, "size": 1, "type": "uint8" },
    { "name": "bytes", "offset": 21, "size": 8, "type": "uint64" },
    { "name": "rtt", "offset": 29, "size": 8, "type": "double" },
    { "name": "host", "offset": 37, "size": 24, "type": "string" } ] }"#;

fn records(bytes: usize) -> Vec<u8> {
    let n = bytes / RS;
    let mut out = vec![0u8; n * RS];
    out.par_chunks_mut(RS).enumerate().for_each(|(i, r)| {
        let x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        r[0..8].copy_from_slice(&(1_700_000_000_000i64 + i as i64).to_le_bytes());
        r[8..12].copy_from_slice(&((x >> 32) as u32).to_le_bytes());
        r[12..16].copy_from_slice(&(x as u32).to_le_bytes());
        r[16..18].copy_from_slice(&((x >> 17) as u16).to_le_bytes());
        let dport = [80u16, 443, 53, 22, 8080, 3306][(x >> 40) as usize % 6];
        r[18..20].copy_from_slice(&dport.to_le_bytes());
        r[20] = [6u8, 17][(x >> 50) as usize % 2];
        r[21..29].copy_from_slice(&((x >> 20) % 1_000_000).to_le_bytes());
        r[29..37].copy_from_slice(&(((x >> 8) % 10_000) as f64 / 100.0).to_le_bytes());
        let host = [
            "api.example.com",
            "cdn.example.net",
            "db.internal",
            "www.example.org",
        ][(x >> 44) as usize % 4];
        r[37..37 + host.len()].copy_from_slice(host.as_bytes());
    });
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn gbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let gb: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
    let schema = parse(SCHEMA).expect("schema");
    let filters = [
        (
            "selective (~1%)",
            r#"[{"filters":[{"field":"dport","op":"eq","value":"22"},{"field":"bytes","op":"lt","value":"60000"}]}]"#,
        ),
        (
            "unselective (~83%)",
            r#"[{"filters":[{"field":"dport","op":"ne","value":"22"}]}]"#,
        ),
        (
            "IN list + prefix",
            r#"[{"filters":[{"field":"sport","op":"in","values":["1","7","80","443","1024","2048","4096","8192","16384","32768","65535","3","5","9","11","13"]}]},{"filters":[{"field":"host","op":"prefix","value":"db."},{"field":"rtt","op":"gt","value":"50"}]}]"#,
        ),
    ];
    let data = records((gb * 1e9) as usize);
    let bytes = data.len();
    let path = std::env::temp_dir().join(format!("hd-gpu-bench-{}.rec", std::process::id()));
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&data))
        .expect("writes the page-cache copy");
    let file = std::fs::File::open(&path).expect("opens it");
    let cores = rayon::current_num_threads();
    println!(
        "gpu_filter: {:.2} GB of {RS}-byte records, {cores} cores, median of {rounds} rounds",
        bytes as f64 / 1e9
    );
    let gpu = GpuDevice::open(0);
    match &gpu {
        Ok(d) => println!(
            "GPU: {} ({} GiB, compute {}.{})",
            d.name(),
            d.memory() >> 30,
            d.capability().0,
            d.capability().1
        ),
        Err(e) => println!("GPU: none ({e}); its columns stay empty"),
    }
    println!(
        "{:<20} {:>9} {:>13} {:>13} {:>9} {:>13} {:>11} {:>11}",
        "filter", "matched", "cpu 1 core", "cpu all", "gpu", "gpu (cache)", "gpu/1 core", "gpu/all"
    );
    for (name, json) in filters {
        let f = ScanFilter::compile(&schema, json).expect("filter");
        let want = data
            .par_chunks(CHUNK / RS * RS)
            .map(|c| f.filter(c).len() / RS)
            .sum::<usize>();
        let one = median(
            (0..rounds)
                .map(|_| {
                    let t = Instant::now();
                    let mut out = Vec::new();
                    for c in data.chunks(CHUNK / RS * RS) {
                        out.clear();
                        f.filter_into(c, &mut out);
                    }
                    gbps(bytes, t.elapsed().as_secs_f64())
                })
                .collect(),
        );
        let all = median(
            (0..rounds)
                .map(|_| {
                    let t = Instant::now();
                    let n: usize = data
                        .par_chunks(CHUNK / RS * RS)
                        .map(|c| f.filter(c).len())
                        .sum();
                    assert_eq!(n / RS, want);
                    gbps(bytes, t.elapsed().as_secs_f64())
                })
                .collect(),
        );
        let (mut g, mut gc) = (f64::NAN, f64::NAN);
        if let Ok(dev) = &gpu {
            let k = dev.compile(&f).expect("compiles");
            g = median(
                (0..rounds)
                    .map(|_| {
                        let t = Instant::now();
                        let flags = k.flags(&data).expect("runs");
                        let s = gbps(bytes, t.elapsed().as_secs_f64());
                        assert_eq!(
                            flags.iter().filter(|&&x| x == 1).count(),
                            want,
                            "GPU and CPU agree"
                        );
                        s
                    })
                    .collect(),
            );
            // From the page cache: 256 MiB reads, each filtered on the GPU.
            gc = median(
                (0..rounds)
                    .map(|_| {
                        let t = Instant::now();
                        let mut buf = vec![0u8; (256 << 20) / RS * RS];
                        let (mut at, mut n) = (0u64, 0usize);
                        while (at as usize) < bytes {
                            let len = buf.len().min(bytes - at as usize);
                            file.read_exact_at(&mut buf[..len], at).expect("reads");
                            n += k
                                .flags(&buf[..len])
                                .expect("runs")
                                .iter()
                                .filter(|&&x| x == 1)
                                .count();
                            at += len as u64;
                        }
                        assert_eq!(n, want);
                        gbps(bytes, t.elapsed().as_secs_f64())
                    })
                    .collect(),
            );
        }
        let cell = |v: f64, unit: &str| {
            if v.is_nan() {
                "—".to_string()
            } else {
                format!("{v:.2}{unit}")
            }
        };
        println!(
            "{name:<20} {:>8.1}% {:>13} {:>13} {:>9} {:>13} {:>11} {:>11}",
            want as f64 * 100.0 / (bytes / RS) as f64,
            cell(one, " GB/s"),
            cell(all, " GB/s"),
            cell(g, " GB/s"),
            cell(gc, " GB/s"),
            cell(g / one, "×"),
            cell(g / all, "×")
        );
    }
    let _ = std::fs::remove_file(&path);
}
