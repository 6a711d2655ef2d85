import Foundation

/// The JSON coders of pack files: sorted keys and unescaped slashes, so an index is the same bytes
/// for the same pack (its SHA-256 is in the download manifest).
package enum JSONCoding {
    package static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    package static var decoder: JSONDecoder { JSONDecoder() }

    /// `bytes` decoded as `T`, refused with ``PackError/Code/invalidMetadata`` when longer than
    /// `limit` (check `sizeCheck`) or not `T`'s JSON (check `json`); `what` names the document.
    package static func decodeBounded<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], limit: Int, what: String, sizeCheck: String
    ) throws(PackError) -> T {
        guard bytes.count <= limit else {
            throw .invalid("\(what) is \(bytes.count) bytes; a device reads at most \(limit)", check: sizeCheck)
        }
        do {
            return try decoder.decode(T.self, from: Data(bytes))
        } catch {
            throw .invalid("\(what) is not one `ba pack` writes: \(describe(error))", check: "json")
        }
    }

    /// A decoding error as a person can act on it: the key path and what was wrong.
    package static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return keys.isEmpty ? "" : " at \(keys.hasPrefix(".") ? String(keys.dropFirst()) : keys)"
        }
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(context.debugDescription)\(path(context))"
        case .keyNotFound(let key, let context): return "missing \"\(key.stringValue)\"\(path(context))"
        case .dataCorrupted(let context): return "\(context.debugDescription)\(path(context))"
        @unknown default: return "\(error)"
        }
    }
}
