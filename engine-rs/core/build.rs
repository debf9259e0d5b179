//! Compiles the DPDK shim (`dpdk/hd_dpdk.c`) into `libhd_dpdk.so` when pkg-config finds Debian's
//! libdpdk-dev, and tells src/netio/dpdk.rs where it is (`HD_DPDK_SHIM_BUILT`). Without DPDK the
//! crate builds as before and a DPDK port says how to get one. `HD_DPDK=off` skips the shim;
//! the `dpdk` feature makes a missing libdpdk-dev an error.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn pkg_config(arg: &str) -> Option<String> {
    let out = Command::new("pkg-config")
        .args([arg, "libdpdk"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=dpdk/hd_dpdk.c");
    println!("cargo:rerun-if-env-changed=HD_DPDK");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let required = env::var_os("CARGO_FEATURE_DPDK").is_some();
    if env::var("HD_DPDK").as_deref() == Ok("off") && !required {
        return;
    }
    let (Some(cflags), Some(libs)) = (pkg_config("--cflags"), pkg_config("--libs")) else {
        if required {
            panic!("feature `dpdk`: pkg-config finds no libdpdk; install it (apt-get install libdpdk-dev pkg-config)");
        }
        return;
    };
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("libhd_dpdk.so");
    let mut cmd = cc::Build::new().get_compiler().to_command();
    cmd.args([
        "-O2",
        "-fPIC",
        "-shared",
        "-Wall",
        "-Werror",
        "dpdk/hd_dpdk.c",
        "-o",
    ])
    .arg(&out)
    .args(cflags.split_whitespace())
    .args(libs.split_whitespace());
    match cmd.output() {
        Ok(o) if o.status.success() => {
            println!("cargo:rustc-env=HD_DPDK_SHIM_BUILT={}", out.display());
        }
        Ok(o) => {
            let msg = String::from_utf8_lossy(&o.stderr);
            if required {
                panic!("feature `dpdk`: the DPDK shim did not compile:\n{msg}");
            }
            println!(
                "cargo:warning=DPDK shim not built (DPDK ports unavailable): {}",
                msg.lines().next().unwrap_or("")
            );
        }
        Err(e) => {
            if required {
                panic!("feature `dpdk`: cannot run the C compiler: {e}");
            }
            println!("cargo:warning=DPDK shim not built (no C compiler: {e})");
        }
    }
}
