//! The footer cache: a reopened unchanged segment shares its footer; a replaced file is read anew;
//! the cache stays within its byte limit, dropping the least recently used first.

use std::sync::Arc;

use super::*;
use crate::hash::HashAlgorithm;
use crate::segment::footer_cache::{FileIdentity, FooterCache};
use crate::segment::reader::SegmentMeta;

fn meta_of(path: &Path) -> (FileIdentity, Arc<SegmentMeta>) {
    let r = SegmentReader::open(path).expect("open");
    let stat = std::fs::metadata(path).expect("stat");
    (FileIdentity::of(path, &stat), r.meta_arc())
}

#[test]
fn a_cached_open_answers_like_an_uncached_one_and_a_replaced_file_is_read_again() {
    let dir = Scratch::new("fcache");
    let s = write(&dir.0, HashAlgorithm::Sha256, 16, 100, 64);
    let a = SegmentReader::open_cached(&s.path).expect("first");
    let b = SegmentReader::open_cached(&s.path).expect("second");
    assert!(
        a.shares_meta(&b),
        "the second open shares the first one's footer"
    );
    let plain = SegmentReader::open(&s.path).expect("uncached");
    assert_eq!(b.records(), plain.records());
    assert_eq!(b.batch_filter(), plain.batch_filter());
    assert_eq!(
        b.read_blocks(0, 2).expect("read"),
        plain.read_blocks(0, 2).expect("read")
    );
    // Another segment of the same batch put in its place (new inode, other length): read anew.
    let other = Scratch::new("fcache-other");
    let s2 = write(&other.0, HashAlgorithm::Sha256, 16, 40, 64);
    std::fs::rename(&s2.path, &s.path).expect("replace");
    let c = SegmentReader::open_cached(&s.path).expect("third");
    assert!(!c.shares_meta(&a));
    assert_eq!(c.records(), 40);
    // A replaced file whose footer is damaged fails its open, cached predecessor or not.
    let bytes = std::fs::read(&s.path).expect("read file");
    let mut bad = bytes.clone();
    let at = bad.len() - TAIL_LEN - 3;
    bad[at] ^= 0x40;
    let tmp = dir.0.join("bad.tmp");
    std::fs::write(&tmp, &bad).expect("write");
    std::fs::rename(&tmp, &s.path).expect("replace");
    assert!(matches!(
        SegmentReader::open_cached(&s.path),
        Err(SegmentError::FooterChecksum)
    ));
}

#[test]
fn the_cache_keeps_within_its_limit_dropping_the_least_recently_used() {
    let dir = Scratch::new("fcache-lru");
    let mut metas = Vec::new();
    for k in 0..3u8 {
        let d = dir.0.join(format!("d{k}"));
        std::fs::create_dir_all(&d).expect("dir");
        let s = write(&d, HashAlgorithm::Sha256, 16, 100, 64);
        metas.push(meta_of(&s.path));
    }
    let one = metas[0].1.bytes;
    let cache = FooterCache::new(2 * one + one / 2);
    cache.put(metas[0].0.clone(), Arc::clone(&metas[0].1));
    cache.put(metas[1].0.clone(), Arc::clone(&metas[1].1));
    assert!(
        cache.get(&metas[0].0).is_some(),
        "0 is now the most recently used"
    );
    cache.put(metas[2].0.clone(), Arc::clone(&metas[2].1));
    assert_eq!(cache.usage(), (2, 2 * one));
    assert!(
        cache.get(&metas[1].0).is_none(),
        "1 was the least recently used"
    );
    assert!(cache.get(&metas[0].0).is_some() && cache.get(&metas[2].0).is_some());
    // A footer larger than the whole cache is not kept.
    let tiny = FooterCache::new(one - 1);
    tiny.put(metas[0].0.clone(), Arc::clone(&metas[0].1));
    assert_eq!(tiny.usage(), (0, 0));
}
