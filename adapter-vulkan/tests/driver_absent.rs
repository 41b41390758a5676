//! Without a Vulkan driver the factory reports the adapter absent with the
//! reason, and the loader goes on; nothing panics.
//!
//! The only test of its binary: it points the Vulkan loader at a driver
//! manifest that does not exist before anything opens the loader.

use cmdbuf_core::adapter::AdapterFactory;
use cmdbuf_core::{AdapterEntry, Backend, DeviceSelector, Loader};
use cmdbuf_vulkan::VulkanAdapterFactory;

#[test]
fn no_driver_means_absent_with_the_reason() {
    let missing = std::env::temp_dir().join("ur-vulkan-no-such-driver.json");
    // SAFETY: this binary's only test sets the variables before any thread
    // (the Vulkan loader's included) reads the environment.
    unsafe {
        // Older loaders read VK_ICD_FILENAMES, newer ones VK_DRIVER_FILES.
        std::env::set_var("VK_ICD_FILENAMES", &missing);
        std::env::set_var("VK_DRIVER_FILES", &missing);
    }

    let reason = match VulkanAdapterFactory.load() {
        Ok(platforms) => panic!("{} platforms without a driver", platforms.len()),
        Err(reason) => reason,
    };
    assert!(!reason.is_empty());
    assert!(reason.contains("Vulkan") || reason.contains("vk"), "the reason names Vulkan: {reason}");

    let loader = Loader::load(&[AdapterEntry::Compiled(&VulkanAdapterFactory)], DeviceSelector::all());
    assert!(loader.platforms().is_empty());
    let absent = loader.absent();
    assert_eq!(absent.len(), 1);
    assert_eq!(absent[0].backend, Backend::Vulkan);
    assert!(!absent[0].reason.is_empty());
}
