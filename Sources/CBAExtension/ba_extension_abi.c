// Compile-time checks of the C ABI layout (LP64: x86_64 and aarch64 Linux). A failure here means
// a change to ba_extension.h moved a field: that is a new ABI major, not an edit.
#include "ba_extension.h"

#define BA_ASSERT_OFFSET(type, field, value) \
    _Static_assert(offsetof(type, field) == (value), #type "." #field " moved")
#define BA_ASSERT_SIZE(type, value) _Static_assert(sizeof(type) == (value), "sizeof(" #type ") changed")

_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "the 1.x ABI is defined for LP64 platforms");

BA_ASSERT_SIZE(ba_header, 32);
BA_ASSERT_SIZE(ba_download, 128);
BA_ASSERT_OFFSET(ba_download, identifier, 8);
BA_ASSERT_OFFSET(ba_download, url, 24);
BA_ASSERT_OFFSET(ba_download, application_group_identifier, 40);
BA_ASSERT_OFFSET(ba_download, file_size, 56);
BA_ASSERT_OFFSET(ba_download, priority, 64);
BA_ASSERT_OFFSET(ba_download, headers, 72);
BA_ASSERT_OFFSET(ba_download, unique_identifier, 88);
BA_ASSERT_OFFSET(ba_download, state, 104);
BA_ASSERT_OFFSET(ba_download, sha256_hex, 112);
BA_ASSERT_SIZE(ba_error, 40);
BA_ASSERT_SIZE(ba_content_request_info, 56);
BA_ASSERT_OFFSET(ba_content_request_info, manifest_path, 8);
BA_ASSERT_OFFSET(ba_content_request_info, restricted_download_size_remaining, 40);
BA_ASSERT_SIZE(ba_auth_challenge, 80);
BA_ASSERT_SIZE(ba_host_api, 80);
BA_ASSERT_OFFSET(ba_host_api, log, 8);
BA_ASSERT_OFFSET(ba_host_api, last_error_message, 72);
/* 1.0 ended at 88 bytes; 1.1 appended should_download there. */
BA_ASSERT_SIZE(ba_extension_desc, 96);
BA_ASSERT_OFFSET(ba_extension_desc, abi_major, 4);
BA_ASSERT_OFFSET(ba_extension_desc, abi_minor, 6);
BA_ASSERT_OFFSET(ba_extension_desc, context, 40);
BA_ASSERT_OFFSET(ba_extension_desc, downloads_for_request, 48);
BA_ASSERT_OFFSET(ba_extension_desc, extension_will_terminate, 80);
BA_ASSERT_OFFSET(ba_extension_desc, should_download, 88);
BA_ASSERT_SIZE(ba_asset_pack, 56);
BA_ASSERT_OFFSET(ba_asset_pack, id, 8);
BA_ASSERT_OFFSET(ba_asset_pack, version, 24);
BA_ASSERT_OFFSET(ba_asset_pack, download_size, 32);
BA_ASSERT_OFFSET(ba_asset_pack, user_info, 40);
