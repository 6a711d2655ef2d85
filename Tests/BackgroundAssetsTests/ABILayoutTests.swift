import CBAExtension
import Testing

/// The C ABI's layout, checked from Swift as well as by the _Static_asserts in ba_extension_abi.c.
/// A failure means a field moved: that is a new ABI major, not an edit.
@Suite struct ABILayoutTests {
    @Test func versions() {
        #expect(BA_EXTENSION_ABI_MAJOR == 1)
        #expect(BA_EXTENSION_ABI_MINOR == 2)
        #expect(BA_DOWNLOAD_FLAG_ASSET_PACK == 0x4)
        #expect(BA_EXTENSION_DESCRIPTOR_SYMBOL == "ba_extension_descriptor")
    }

    @Test func sizesAndOffsets() {
        // 1.1 appended should_download at 1.0's end (88).
        #expect(MemoryLayout<ba_extension_desc>.size == 96)
        #expect(MemoryLayout<ba_extension_desc>.offset(of: \.should_download) == 88)
        #expect(MemoryLayout<ba_extension_desc>.offset(of: \.abi_major) == 4)
        #expect(MemoryLayout<ba_extension_desc>.offset(of: \.abi_minor) == 6)
        #expect(MemoryLayout<ba_extension_desc>.offset(of: \.context) == 40)
        #expect(MemoryLayout<ba_extension_desc>.offset(of: \.downloads_for_request) == 48)
        #expect(MemoryLayout<ba_extension_desc>.offset(of: \.extension_will_terminate) == 80)
        #expect(MemoryLayout<ba_host_api>.size == 80)
        #expect(MemoryLayout<ba_host_api>.offset(of: \.log) == 8)
        #expect(MemoryLayout<ba_host_api>.offset(of: \.last_error_message) == 72)
        #expect(MemoryLayout<ba_download>.size == 128)
        #expect(MemoryLayout<ba_download>.offset(of: \.identifier) == 8)
        #expect(MemoryLayout<ba_download>.offset(of: \.file_size) == 56)
        #expect(MemoryLayout<ba_download>.offset(of: \.headers) == 72)
        #expect(MemoryLayout<ba_download>.offset(of: \.state) == 104)
        #expect(MemoryLayout<ba_download>.offset(of: \.sha256_hex) == 112)
        #expect(MemoryLayout<ba_header>.size == 32)
        #expect(MemoryLayout<ba_error>.size == 40)
        #expect(MemoryLayout<ba_content_request_info>.size == 56)
        #expect(MemoryLayout<ba_content_request_info>.offset(of: \.restricted_download_size_remaining) == 40)
        #expect(MemoryLayout<ba_auth_challenge>.size == 80)
        #expect(MemoryLayout<ba_asset_pack>.size == 56)
        #expect(MemoryLayout<ba_asset_pack>.offset(of: \.id) == 8)
        #expect(MemoryLayout<ba_asset_pack>.offset(of: \.version) == 24)
        #expect(MemoryLayout<ba_asset_pack>.offset(of: \.download_size) == 32)
        #expect(MemoryLayout<ba_asset_pack>.offset(of: \.user_info) == 40)
    }
}
