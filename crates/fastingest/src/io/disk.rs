//! Whether a local file's device is rotational, as Linux's sysfs says. A
//! disk that seeks (or a virtual disk that calls itself one) reads a few long
//! streams faster than many short reads at once: see
//! [`crate::config::LocalDisk`] for what a read does with the answer.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// Whether the block device `dev` (a file's `st_dev`) is rotational; `false`
/// where nothing says so (not Linux; a filesystem with no block device of
/// its own: tmpfs, overlay, NFS). Asked once per device and process.
pub fn device_is_rotational(dev: u64) -> bool {
    static KNOWN: OnceLock<Mutex<HashMap<u64, bool>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    let lock = || known.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&rotational) = lock().get(&dev) {
        return rotational;
    }
    let rotational = ask_the_system(dev);
    lock().insert(dev, rotational);
    rotational
}

#[cfg(target_os = "linux")]
fn ask_the_system(dev: u64) -> bool {
    rotational_in(
        Path::new("/sys/dev/block"),
        libc::major(dev),
        libc::minor(dev),
    )
}

#[cfg(not(target_os = "linux"))]
fn ask_the_system(_dev: u64) -> bool {
    false
}

/// `<block>/<major>:<minor>/queue/rotational`; a partition has no queue of
/// its own, so then its disk's (the folder above the partition's).
fn rotational_in(block: &Path, major: u32, minor: u32) -> bool {
    let device = block.join(format!("{major}:{minor}"));
    let says = |folder: &Path| {
        std::fs::read_to_string(folder.join("queue/rotational"))
            .ok()
            .map(|text| text.trim() == "1")
    };
    says(&device)
        .or_else(|| {
            let real = std::fs::canonicalize(&device).ok()?;
            says(real.parent()?)
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn disks_partitions_and_devices_without_a_queue() {
        let root = std::env::temp_dir().join(format!("fastingest-disk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (devices, block) = (root.join("devices"), root.join("block"));
        std::fs::create_dir_all(&block).unwrap();
        // A spinning disk (8:0) with a partition (8:1), a solid one (259:0).
        write(&devices.join("sda/queue/rotational"), "1\n");
        std::fs::create_dir_all(devices.join("sda/sda1")).unwrap();
        write(&devices.join("nvme0n1/queue/rotational"), "0\n");
        std::os::unix::fs::symlink(devices.join("sda"), block.join("8:0")).unwrap();
        std::os::unix::fs::symlink(devices.join("sda/sda1"), block.join("8:1")).unwrap();
        std::os::unix::fs::symlink(devices.join("nvme0n1"), block.join("259:0")).unwrap();
        assert!(rotational_in(&block, 8, 0));
        assert!(
            rotational_in(&block, 8, 1),
            "a partition answers for its disk"
        );
        assert!(!rotational_in(&block, 259, 0));
        assert!(!rotational_in(&block, 0, 42), "no device: not rotational");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_real_device_is_looked_up_by_its_numbers() {
        use std::os::unix::fs::MetadataExt;
        let dev = std::fs::metadata(std::env::temp_dir()).unwrap().dev();
        let sysfs = rotational_in(
            Path::new("/sys/dev/block"),
            libc::major(dev),
            libc::minor(dev),
        );
        assert_eq!(device_is_rotational(dev), sysfs);
        assert_eq!(device_is_rotational(dev), sysfs, "kept, not asked again");
    }
}
