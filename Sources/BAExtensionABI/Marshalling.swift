import BACore
import CBAExtension

#if canImport(Glibc)
    import Glibc
#endif

/// C memory for what is handed across the extension ABI; freed when the arena goes away.
package final class CArena {
    package init() {}

    private var allocations: [UnsafeMutableRawPointer] = []

    deinit { allocations.forEach { free($0) } }

    /// A NUL-terminated copy of `string` and its length in bytes (without the NUL).
    package func string(_ string: String) -> (UnsafePointer<CChar>, Int) {
        let bytes = Array(string.utf8)
        let memory = malloc(bytes.count + 1)!.assumingMemoryBound(to: CChar.self)
        bytes.withUnsafeBufferPointer { source in
            memory.withMemoryRebound(to: UInt8.self, capacity: bytes.count + 1) { target in
                if let base = source.baseAddress { target.update(from: base, count: bytes.count) }
                target[bytes.count] = 0
            }
        }
        allocations.append(UnsafeMutableRawPointer(memory))
        return (UnsafePointer(memory), bytes.count)
    }

    /// Uninitialized, zeroed storage for `count` values of `T`.
    package func allocate<T>(_ type: T.Type, count: Int = 1) -> UnsafeMutablePointer<T> {
        let memory = calloc(max(count, 1), MemoryLayout<T>.stride)!
        allocations.append(memory)
        return memory.bindMemory(to: T.self, capacity: max(count, 1))
    }

    /// A `ba_download` filled in from `record`, valid while the arena lives.
    package func download(_ record: DownloadDescription) -> UnsafeMutablePointer<ba_download> {
        let download = allocate(ba_download.self)
        download.pointee.struct_size = UInt32(MemoryLayout<ba_download>.size)
        download.pointee.flags =
            (record.isEssential ? UInt32(BA_DOWNLOAD_FLAG_ESSENTIAL) : 0)
            | (record.allowsExpensiveNetworkAccess ? 0 : UInt32(BA_DOWNLOAD_FLAG_NO_METERED_NETWORK))
            | (record.isAssetPack ? UInt32(BA_DOWNLOAD_FLAG_ASSET_PACK) : 0)
        (download.pointee.identifier, download.pointee.identifier_length) = string(record.identifier)
        (download.pointee.url, download.pointee.url_length) = string(record.url)
        if let group = record.applicationGroupIdentifier {
            (download.pointee.application_group_identifier, download.pointee.application_group_identifier_length) =
                string(group)
        }
        download.pointee.file_size = record.fileSize
        download.pointee.priority = record.priority
        if !record.headers.isEmpty {
            let headers = allocate(ba_header.self, count: record.headers.count)
            for (index, header) in record.headers.enumerated() {
                (headers[index].name, headers[index].name_length) = string(header.name)
                (headers[index].value, headers[index].value_length) = string(header.value)
            }
            download.pointee.headers = UnsafePointer(headers)
            download.pointee.header_count = record.headers.count
        }
        (download.pointee.unique_identifier, download.pointee.unique_identifier_length) = string(
            record.uniqueIdentifier)
        download.pointee.state = ba_download_state(record.state.rawValue)
        if let sha = record.sha256 { (download.pointee.sha256_hex, download.pointee.sha256_hex_length) = string(sha) }
        return download
    }
}

/// Longest string copied out of the other side of the ABI (a longer one makes the record malformed).
package let maximumStringLength = 64 * 1024

/// Copies `length` bytes at `pointer` into a String. Sets `wellFormed` to false for a NULL
/// pointer with a length, an over-long string or invalid UTF-8, rather than trusting it.
package func copyString(_ pointer: UnsafePointer<CChar>?, _ length: Int, wellFormed: inout Bool) -> String {
    guard length > 0 else { return "" }
    guard let pointer, length <= maximumStringLength else {
        wellFormed = false
        return ""
    }
    let bytes = UnsafeRawBufferPointer(start: pointer, count: length)
    if let string = String(validating: bytes, as: UTF8.self) { return string }
    wellFormed = false
    return String(decoding: bytes, as: UTF8.self)
}

/// The smallest `ba_download` a 1.0 extension can pass.
package let minimumDownloadStructSize = MemoryLayout<ba_download>.size

/// Reads a `ba_download` from the other side into a record, never trusting its pointers beyond
/// what its sizes say. Returns nil (with a reason) when it cannot be read at all.
package func readDownload(
    _ pointer: UnsafePointer<ba_download>?
) -> Result<DownloadDescription, DownloadRules.Violation> {
    guard let pointer else { return .failure(.init(code: 0, reason: "download is NULL")) }
    let download = pointer.pointee
    guard Int(download.struct_size) >= minimumDownloadStructSize else {
        return .failure(
            .init(
                code: 0,
                reason:
                    "ba_download.struct_size \(download.struct_size) is smaller than ABI 1.0's \(minimumDownloadStructSize)"
            ))
    }
    var wellFormed = true
    let identifier = copyString(download.identifier, download.identifier_length, wellFormed: &wellFormed)
    let url = copyString(download.url, download.url_length, wellFormed: &wellFormed)
    let group =
        download.application_group_identifier_length > 0
        ? copyString(
            download.application_group_identifier, download.application_group_identifier_length, wellFormed: &wellFormed
        )
        : nil
    var headers: [DownloadDescription.Header] = []
    if download.header_count > DownloadDescription.maximumHeaderCount {
        wellFormed = false
    } else if download.header_count > 0 {
        if let list = download.headers {
            for index in 0..<download.header_count {
                let header = list[index]
                headers.append(
                    .init(
                        name: copyString(header.name, header.name_length, wellFormed: &wellFormed),
                        value: copyString(header.value, header.value_length, wellFormed: &wellFormed)))
            }
        } else {
            wellFormed = false
        }
    }
    let sha =
        download.sha256_hex_length > 0
        ? copyString(download.sha256_hex, download.sha256_hex_length, wellFormed: &wellFormed) : nil
    return .success(
        DownloadDescription(
            identifier: identifier, url: url, headers: headers, applicationGroupIdentifier: group,
            priority: download.priority, isEssential: download.isEssential,
            fileSize: download.file_size, sha256: sha,
            allowsExpensiveNetworkAccess: download.allowsExpensiveNetworkAccess,
            isWellFormed: wellFormed, isAssetPack: download.isAssetPack))
}

/// Reads a download the host handed over (entry-point argument or current download): like
/// ``readDownload(_:)`` plus the fields only the system sets (unique identifier, state).
package func readHostDownload(_ pointer: UnsafePointer<ba_download>?) -> DownloadDescription? {
    guard let pointer, case .success(var record) = readDownload(pointer) else { return nil }
    var wellFormed = true
    record.uniqueIdentifier = copyString(
        pointer.pointee.unique_identifier, pointer.pointee.unique_identifier_length, wellFormed: &wellFormed)
    if let state = DownloadState(rawValue: Int(pointer.pointee.state)) {
        record.state = state
    } else {
        wellFormed = false
    }
    record.isWellFormed = record.isWellFormed && wellFormed
    return record
}

extension ByteWriter {
    /// Writes a `ba_download` from the other side in ``DownloadDescription``'s wire layout, copying its
    /// bytes without building Strings: the reader validates UTF-8 (``ByteReader/string(valid:)``)
    /// and a record whose pointers and lengths disagree is sent marked malformed.
    /// Returns a violation, writing nothing, when the struct cannot be read at all.
    package mutating func download(from pointer: UnsafePointer<ba_download>?) -> DownloadRules.Violation? {
        guard let pointer else { return .init(code: 0, reason: "download is NULL") }
        let download = pointer.pointee
        guard Int(download.struct_size) >= minimumDownloadStructSize else {
            return .init(
                code: 0,
                reason:
                    "ba_download.struct_size \(download.struct_size) is smaller than ABI 1.0's \(minimumDownloadStructSize)"
            )
        }
        var wellFormed = true
        func text(_ pointer: UnsafePointer<CChar>?, _ length: Int) {
            if length > 0 && (pointer == nil || length > maximumStringLength) {
                wellFormed = false
                blob(nil, count: 0)
            } else {
                blob(pointer, count: length)
            }
        }
        text(download.identifier, download.identifier_length)
        text(nil, 0)  // unique identifier: assigned by the system
        text(download.url, download.url_length)
        bool(download.application_group_identifier_length > 0)
        if download.application_group_identifier_length > 0 {
            text(download.application_group_identifier, download.application_group_identifier_length)
        }
        i64(download.file_size)
        i64(download.priority)
        bool(download.isEssential)
        i32(0)  // state: assigned by the system
        let headerCount =
            download.header_count <= DownloadDescription.maximumHeaderCount
                && (download.headers != nil || download.header_count == 0)
            ? download.header_count : 0
        if headerCount != download.header_count { wellFormed = false }
        u32(UInt32(headerCount))
        for index in 0..<headerCount {
            let header = download.headers![index]
            text(header.name, header.name_length)
            text(header.value, header.value_length)
        }
        bool(download.sha256_hex_length > 0)
        if download.sha256_hex_length > 0 { text(download.sha256_hex, download.sha256_hex_length) }
        bool(download.allowsExpensiveNetworkAccess)
        bool(download.isAssetPack)
        bool(wellFormed)
        return nil
    }
}

extension ba_download {
    /// `BA_DOWNLOAD_FLAG_ESSENTIAL`.
    var isEssential: Bool { flags & UInt32(BA_DOWNLOAD_FLAG_ESSENTIAL) != 0 }
    /// Not `BA_DOWNLOAD_FLAG_NO_METERED_NETWORK` (Apple's `allowsExpensiveNetworkAccess`).
    var allowsExpensiveNetworkAccess: Bool { flags & UInt32(BA_DOWNLOAD_FLAG_NO_METERED_NETWORK) == 0 }
    /// `BA_DOWNLOAD_FLAG_ASSET_PACK` (ABI 1.2): a self-hosted asset pack, installed rather than delivered.
    var isAssetPack: Bool { flags & UInt32(BA_DOWNLOAD_FLAG_ASSET_PACK) != 0 }
}
