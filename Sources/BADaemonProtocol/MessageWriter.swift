import BACore

/// Writes the messages basd sends most (events, `ok`, and lists of downloads: the answer to `schedule`, listings)
/// as JSON directly, byte for byte what `JSONEncoder` with sorted keys writes for them: Foundation's
/// encoder builds a tree of boxed values for each message, and was a sixth of basd's executor time
/// in the small-files benchmark. Anything else (and a value this writer does not cover: a
/// `Double`) is left to `JSONEncoder` (``writeServerMessage(_:)`` returns nil).
package enum MessageWriter {
    /// A JSON value of an object being written: written in sorted key order once all are known.
    private enum Value {
        case int(Int64)
        case bool(Bool)
        case string(String)
        case raw([UInt8])
    }

    /// The JSON of `message` (no frame prefix), or nil when it is not one this writer covers.
    package static func writeServerMessage(_ message: ServerMessage) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        switch message {
        case .event(let event):
            guard let body = write(event) else { return nil }
            object([("event", .raw(body)), ("type", .string("event"))], into: &out)
        case .response(let id, let result), .partialResponse(let id, let result):
            guard let body = write(result) else { return nil }
            var fields: [(String, Value)] = [
                ("id", .int(Int64(id))), ("result", .raw(body)), ("type", .string("response")),
            ]
            if case .partialResponse = message { fields.append(("more", .bool(true))) }
            object(fields, into: &out)
        case .packEvent:
            return nil
        }
        return out
    }

    /// The JSON of `message` (no frame prefix), or nil when it is not one this writer covers: an
    /// app's frequent requests (`schedule`, `acknowledgeEvents`, and those without fields).
    package static func writeClientMessage(_ message: ClientMessage) -> [UInt8]? {
        guard message.id <= UInt64(Int64.max) else { return nil }
        var fields: [(String, Value)] = [
            ("id", .int(Int64(bitPattern: message.id))), ("type", .string(message.request.type)),
        ]
        switch message.request {
        case .status, .currentDownloads, .subscribeEvents: break
        case .schedule(let download): fields.append(("download", .raw(write(download))))
        case .startForeground(let identifier), .cancel(let identifier):
            fields.append(("identifier", .string(identifier)))
        case .acknowledgeEvents(let sequence): fields.append(("throughSequence", .int(sequence)))
        default: return nil
        }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        object(fields, into: &out)
        return out
    }

    private static func write(_ result: ServerMessage.Result) -> [UInt8]? {
        var out: [UInt8] = []
        switch result {
        case .ok:
            object([("type", .string("ok"))], into: &out)
        case .downloads(let infos):
            guard let list = write(infos) else { return nil }
            object([("downloads", .raw(list)), ("type", .string("downloads"))], into: &out)
        case .downloadList(let listing):
            guard let list = write(listing.downloads) else { return nil }
            var inner: [UInt8] = []
            object([("downloads", .raw(list)), ("notShown", .int(Int64(listing.notShown)))], into: &inner)
            object([("downloadList", .raw(inner)), ("type", .string("downloadList"))], into: &out)
        default:
            return nil
        }
        return out
    }

    private static func write(_ infos: [DownloadInfo]) -> [UInt8]? {
        var list: [UInt8] = [UInt8(ascii: "[")]
        list.reserveCapacity(infos.count * 300)
        for (index, info) in infos.enumerated() {
            if index > 0 { list.append(UInt8(ascii: ",")) }
            guard let item = write(info) else { return nil }
            list += item
        }
        list.append(UInt8(ascii: "]"))
        return list
    }

    private static func write(_ info: DownloadInfo) -> [UInt8]? {
        // A Double (nextAttemptAt) is Foundation's to format.
        guard info.nextAttemptAt == nil else { return nil }
        var fields: [(String, Value)] = [
            ("bytesOnDisk", .int(info.bytesOnDisk)), ("download", .raw(write(info.download))),
            ("isForeground", .bool(info.isForeground)), ("state", .int(Int64(info.state.rawValue))),
            ("uniqueIdentifier", .string(info.uniqueIdentifier)),
        ]
        if let value = info.appIdentifier { fields.append(("appIdentifier", .string(value))) }
        if let value = info.attempts { fields.append(("attempts", .int(Int64(value)))) }
        if let value = info.errorCode { fields.append(("errorCode", .int(Int64(value)))) }
        if let value = info.errorMessage { fields.append(("errorMessage", .string(value))) }
        if let value = info.parkedEvent { fields.append(("parkedEvent", .string(value))) }
        if let value = info.queuePosition { fields.append(("queuePosition", .int(Int64(value)))) }
        if let value = info.waitingFor { fields.append(("waitingFor", .string(value))) }
        var out: [UInt8] = []
        object(fields, into: &out)
        return out
    }

    private static func write(_ download: DownloadDescription) -> [UInt8] {
        var headers: [UInt8] = [UInt8(ascii: "[")]
        for (index, header) in download.headers.enumerated() {
            if index > 0 { headers.append(UInt8(ascii: ",")) }
            object([("name", .string(header.name)), ("value", .string(header.value))], into: &headers)
        }
        headers.append(UInt8(ascii: "]"))
        var fields: [(String, Value)] = [
            ("headers", .raw(headers)), ("identifier", .string(download.identifier)),
            ("isEssential", .bool(download.isEssential)), ("priority", .int(download.priority)),
            ("url", .string(download.url)),
        ]
        if let value = download.applicationGroupIdentifier {
            fields.append(("applicationGroupIdentifier", .string(value)))
        }
        if download.fileSize != 0 { fields.append(("fileSize", .int(download.fileSize))) }
        if let value = download.sha256 { fields.append(("sha256", .string(value))) }
        if !download.allowsExpensiveNetworkAccess { fields.append(("allowsExpensiveNetworkAccess", .bool(false))) }
        if download.isAssetPack { fields.append(("assetPack", .bool(true))) }
        if !download.uniqueIdentifier.isEmpty {
            fields.append(("uniqueIdentifier", .string(download.uniqueIdentifier)))
        }
        var out: [UInt8] = []
        object(fields, into: &out)
        return out
    }

    private static func write(_ event: DownloadEvent) -> [UInt8]? {
        var fields: [(String, Value)] = [
            ("downloadUniqueIdentifier", .string(event.downloadUniqueIdentifier)),
            ("identifier", .string(event.identifier)), ("kind", .string(event.kind.rawValue)),
            ("sequence", .int(event.sequence)),
        ]
        if let value = event.appIdentifier { fields.append(("appIdentifier", .string(value))) }
        if let value = event.download { fields.append(("download", .raw(write(value)))) }
        if let value = event.parked { fields.append(("parked", .string(value))) }
        switch event.change {
        case .began(let offset, let isForeground):
            fields += [("offset", .int(offset)), ("isForeground", .bool(isForeground))]
        case .paused(let bytesOnDisk):
            fields.append(("bytesOnDisk", .int(bytesOnDisk)))
        case .progress(let bytesWritten, let totalBytes):
            fields.append(("bytesWritten", .int(bytesWritten)))
            if let totalBytes { fields.append(("totalBytes", .int(totalBytes))) }
        case .finished(let destination, let size):
            fields += [("destination", .string(destination)), ("size", .int(size))]
        case .failed(let domain, let code, let message):
            fields += [
                ("errorDomain", .string(domain)), ("errorCode", .int(Int64(code))), ("errorMessage", .string(message)),
            ]
        case .needsCredentials(let challenge):
            fields.append(("challenge", .string(challenge)))
        case .waiting(let reason, let retryAt, let attempt):
            fields += [("reason", .string(reason)), ("retryAt", .int(retryAt)), ("attempt", .int(Int64(attempt)))]
        }
        var out: [UInt8] = []
        object(fields, into: &out)
        return out
    }

    /// `{"key":value,…}` with the keys in `JSONEncoder`'s sorted order.
    private static func object(_ fields: [(String, Value)], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (index, (key, value)) in fields.sorted(by: { $0.0 < $1.0 }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            string(key, into: &out)
            out.append(UInt8(ascii: ":"))
            switch value {
            case .int(let number): integer(number, into: &out)
            case .bool(let flag): out.append(contentsOf: flag ? "true".utf8 : "false".utf8)
            case .string(let text): string(text, into: &out)
            case .raw(let bytes): out += bytes
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    /// `number` in decimal, as `JSONEncoder` writes an integer.
    private static func integer(_ number: Int64, into out: inout [UInt8]) { JSONText.appendInteger(number, to: &out) }

    /// A JSON string as `JSONEncoder` writes it (slashes escaped).
    private static func string(_ text: String, into out: inout [UInt8]) {
        JSONText.appendString(text, to: &out, escapingSlashes: true)
    }
}
