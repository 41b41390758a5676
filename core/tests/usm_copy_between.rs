//! `Command::usm_copy_between`, the builder of copies between USM positions
//! of any contexts: what it accepts and its typed errors.

use cmdbuf_core::{Command, CommandKind, Context, UrError, UsmAllocation, UsmKind};

#[test]
fn checks_sizes_and_overlap() {
    let device = cmdbuf_cpu::default_device();
    let (a, b) = (Context::new(&device).unwrap(), Context::new(&device).unwrap());
    let x = UsmAllocation::new(&a, UsmKind::Device, 64).unwrap();
    let y = UsmAllocation::new(&b, UsmKind::Device, 32).unwrap();
    let (x0, y0) = (x.usm_ref(), y.usm_ref());
    let x16 = a.find_usm(x.ptr().byte_add(16), 1).unwrap();

    assert_eq!(Command::usm_copy_between(&y0, &x16, 32).unwrap().kind(), CommandKind::UsmMemcpy);
    assert!(matches!(Command::usm_copy_between(&y0, &x0, 0), Err(UrError::InvalidSize(_))));
    assert!(matches!(Command::usm_copy_between(&y0, &x0, 33), Err(UrError::InvalidSize(_))));
    assert!(matches!(Command::usm_copy_between(&x16, &y0, 49), Err(UrError::InvalidSize(_))));
    assert!(matches!(Command::usm_copy_between(&x16, &x0, 17), Err(UrError::OverlappingRegions(_))));
    assert!(Command::usm_copy_between(&x16, &x0, 16).is_ok());
}
