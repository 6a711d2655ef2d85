import BACore

/// Reads the messages that come in numbers (events, `ok`, lists of downloads; `schedule` and
/// `acknowledgeEvents`) from their JSON directly, to exactly the value `JSONDecoder` makes of
/// them: Foundation's decoder builds a tree of boxed values first, and took about 2 s for a
/// 100,000-download `currentDownloads` answer. The counterpart of ``MessageWriter``.
///
/// Whenever it is not sure (another message or result type, a fraction, an exponent, `-0`, a
/// duplicate key, bad JSON, a value `JSONDecoder` would refuse…) it returns nil, and the caller
/// decodes with `JSONDecoder`, which also makes the error: this reader never answers differently.
/// A key the types' `Codable` conformances do not read is skipped (checked as strictly as the rest).
package enum MessageReader {
    /// The message in `payload` (a frame without its prefix), or nil when this reader does not cover it.
    package static func readServerMessage(_ payload: some Collection<UInt8>) -> ServerMessage? {
        read(payload) { (json) throws(JSONCursor.Invalid) in try serverMessage(&json) }
    }

    /// The request in `payload` (a frame without its prefix), or nil when this reader does not cover it.
    package static func readClientMessage(_ payload: some Collection<UInt8>) -> ClientMessage? {
        read(payload) { (json) throws(JSONCursor.Invalid) in try clientMessage(&json) }
    }

    private static func read<Value>(
        _ payload: some Collection<UInt8>, _ body: (inout JSONCursor) throws(JSONCursor.Invalid) -> Value
    ) -> Value? {
        func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Value? {
            var json = JSONCursor(bytes)
            return try? json.document(body)
        }
        if let value = payload.withContiguousStorageIfAvailable(parse) { return value }
        return Array(payload).withUnsafeBufferPointer(parse)
    }

    // MARK: ServerMessage

    private static let serverKeys: [StaticString] = ["type", "id", "result", "more", "event"]

    private static func serverMessage(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> ServerMessage {
        var type: String?
        var id: UInt64?
        var result: ServerMessage.Result?
        var more: Bool?
        var event: DownloadEvent?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(serverKeys, first: &first, seen: &seen) {
            switch key {
            case 0: type = try json.string()
            case 1: id = try json.null() ? nil : json.uint64()
            case 2: result = try json.null() ? nil : self.result(&json)
            case 3: more = try json.null() ? nil : json.bool()
            case 4: event = try json.null() ? nil : downloadEvent(&json)
            default: try json.skipValue()
            }
        }
        switch type {
        case "response":
            guard let id, let result else { throw JSONCursor.Invalid() }
            return more == true
                ? .partialResponse(requestId: id, result: result) : .response(requestId: id, result: result)
        case "event":
            guard let event else { throw JSONCursor.Invalid() }
            return .event(event)
        default: throw JSONCursor.Invalid()
        }
    }

    private static let resultKeys: [StaticString] = ["type", "downloads", "downloadList"]

    private static func result(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> ServerMessage.Result {
        var type: String?
        var downloads: [DownloadInfo]?
        var listing: DownloadListing?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(resultKeys, first: &first, seen: &seen) {
            switch key {
            case 0: type = try json.string()
            case 1: downloads = try json.null() ? nil : downloadInfos(&json)
            case 2: listing = try json.null() ? nil : downloadListing(&json)
            default: try json.skipValue()
            }
        }
        switch type {
        case "ok": return .ok
        case "downloads":
            guard let downloads else { throw JSONCursor.Invalid() }
            return .downloads(downloads)
        case "downloadList":
            guard let listing else { throw JSONCursor.Invalid() }
            return .downloadList(listing)
        default: throw JSONCursor.Invalid()
        }
    }

    private static let listingKeys: [StaticString] = ["downloads", "notShown"]

    private static func downloadListing(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> DownloadListing {
        var downloads: [DownloadInfo]?
        var notShown: Int?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(listingKeys, first: &first, seen: &seen) {
            switch key {
            case 0: downloads = try json.null() ? nil : downloadInfos(&json)
            case 1: notShown = try json.null() ? nil : json.int()
            default: try json.skipValue()
            }
        }
        guard let downloads, let notShown else { throw JSONCursor.Invalid() }
        return DownloadListing(downloads: downloads, notShown: notShown)
    }

    private static func downloadInfos(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> [DownloadInfo] {
        var infos: [DownloadInfo] = []
        try json.beginArray()
        var first = true
        while try json.nextElement(first: &first) { infos.append(try downloadInfo(&json)) }
        return infos
    }

    private static let infoKeys: [StaticString] = [
        "uniqueIdentifier", "download", "state", "isForeground", "bytesOnDisk", "appIdentifier", "attempts",
        "errorCode", "errorMessage", "waitingFor", "nextAttemptAt", "parkedEvent", "queuePosition",
    ]

    /// A ``DownloadInfo`` as its synthesized `Codable` conformance reads it (`null` is an absent optional).
    private static func downloadInfo(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> DownloadInfo {
        var uniqueIdentifier: String?
        var download: DownloadDescription?
        var state: DownloadState?
        var isForeground: Bool?
        var bytesOnDisk: Int64?
        var appIdentifier: String?
        var attempts: Int?
        var errorCode: Int?
        var errorMessage: String?
        var waitingFor: String?
        var parkedEvent: String?
        var queuePosition: Int?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(infoKeys, first: &first, seen: &seen) {
            switch key {
            case 0: uniqueIdentifier = try json.null() ? nil : json.string()
            case 1: download = try json.null() ? nil : downloadDescription(&json)
            case 2:
                if try !json.null() {
                    guard let value = DownloadState(rawValue: try json.int()) else { throw JSONCursor.Invalid() }
                    state = value
                }
            case 3: isForeground = try json.null() ? nil : json.bool()
            case 4: bytesOnDisk = try json.null() ? nil : json.int64()
            case 5: appIdentifier = try json.null() ? nil : json.string()
            case 6: attempts = try json.null() ? nil : json.int()
            case 7: errorCode = try json.null() ? nil : json.int()
            case 8: errorMessage = try json.null() ? nil : json.string()
            case 9: waitingFor = try json.null() ? nil : json.string()
            // A Double is JSONDecoder's to read.
            case 10: guard try json.null() else { throw JSONCursor.Invalid() }
            case 11: parkedEvent = try json.null() ? nil : json.string()
            case 12: queuePosition = try json.null() ? nil : json.int()
            default: try json.skipValue()
            }
        }
        guard let uniqueIdentifier, let download, let state, let isForeground, let bytesOnDisk else {
            throw JSONCursor.Invalid()
        }
        var info = DownloadInfo(
            uniqueIdentifier: uniqueIdentifier, download: download, state: state, isForeground: isForeground,
            bytesOnDisk: bytesOnDisk, appIdentifier: appIdentifier, attempts: attempts, errorCode: errorCode,
            errorMessage: errorMessage)
        info.waitingFor = waitingFor
        info.parkedEvent = parkedEvent
        info.queuePosition = queuePosition
        return info
    }

    private static let descriptionKeys: [StaticString] = [
        "identifier", "uniqueIdentifier", "url", "headers", "applicationGroupIdentifier", "priority", "isEssential",
        "fileSize", "sha256", "allowsExpensiveNetworkAccess", "assetPack",
    ]

    /// A ``DownloadDescription`` as its `Codable` conformance reads it: `uniqueIdentifier` ("")
    /// and `fileSize` (0) may be left out.
    private static func downloadDescription(
        _ json: inout JSONCursor
    ) throws(JSONCursor.Invalid) -> DownloadDescription {
        var identifier: String?
        var uniqueIdentifier: String?
        var url: String?
        var headers: [DownloadDescription.Header]?
        var group: String?
        var priority: Int64?
        var isEssential: Bool?
        var fileSize: Int64?
        var sha256: String?
        var allowsExpensive: Bool?
        var assetPack: Bool?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(descriptionKeys, first: &first, seen: &seen) {
            switch key {
            case 0: identifier = try json.null() ? nil : json.string()
            case 1: uniqueIdentifier = try json.null() ? nil : json.string()
            case 2: url = try json.null() ? nil : json.string()
            case 3: headers = try json.null() ? nil : self.headers(&json)
            case 4: group = try json.null() ? nil : json.string()
            case 5: priority = try json.null() ? nil : json.int64()
            case 6: isEssential = try json.null() ? nil : json.bool()
            case 7: fileSize = try json.null() ? nil : json.int64()
            case 8: sha256 = try json.null() ? nil : json.string()
            case 9: allowsExpensive = try json.null() ? nil : json.bool()
            case 10: assetPack = try json.null() ? nil : json.bool()
            default: try json.skipValue()
            }
        }
        guard let identifier, let url, let headers, let priority, let isEssential else { throw JSONCursor.Invalid() }
        return DownloadDescription(
            identifier: identifier, uniqueIdentifier: uniqueIdentifier ?? "", url: url, headers: headers,
            applicationGroupIdentifier: group, priority: priority, isEssential: isEssential, fileSize: fileSize ?? 0,
            sha256: sha256, allowsExpensiveNetworkAccess: allowsExpensive ?? true, isAssetPack: assetPack ?? false)
    }

    private static let headerKeys: [StaticString] = ["name", "value"]

    private static func headers(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> [DownloadDescription.Header] {
        var headers: [DownloadDescription.Header] = []
        try json.beginArray()
        var firstElement = true
        while try json.nextElement(first: &firstElement) {
            var name: String?
            var value: String?
            try json.beginObject()
            var first = true
            var seen: UInt64 = 0
            while let key = try json.nextKey(headerKeys, first: &first, seen: &seen) {
                switch key {
                case 0: name = try json.null() ? nil : json.string()
                case 1: value = try json.null() ? nil : json.string()
                default: try json.skipValue()
                }
            }
            guard let name, let value else { throw JSONCursor.Invalid() }
            headers.append(DownloadDescription.Header(name: name, value: value))
        }
        return headers
    }

    /// The keys `DownloadEvent` and `DownloadChange` read in an event (`DownloadChange`'s own
    /// `domain`, `code` and `message` are not: a failure's fields are `errorDomain`, `errorCode`
    /// and `errorMessage` there).
    private static let eventKeys: [StaticString] = [
        "sequence", "appIdentifier", "download", "downloadUniqueIdentifier", "identifier", "parked", "kind",
        "errorDomain", "errorCode", "errorMessage", "offset", "isForeground", "bytesOnDisk", "bytesWritten",
        "totalBytes", "destination", "size", "challenge", "reason", "retryAt", "attempt",
    ]

    /// A ``DownloadEvent`` as its `Codable` conformance reads it: the keys of its kind are
    /// required, the other kinds' keys are ignored.
    private static func downloadEvent(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> DownloadEvent {
        var sequence: Int64?
        var appIdentifier: String?
        var download: DownloadDescription?
        var downloadUniqueIdentifier: String?
        var identifier: String?
        var parked: String?
        var kind: DownloadEvent.Kind?
        var errorDomain: String?
        var errorCode: Int?
        var errorMessage: String?
        var offset: Int64?
        var isForeground: Bool?
        var bytesOnDisk: Int64?
        var bytesWritten: Int64?
        var totalBytes: Int64?
        var destination: String?
        var size: Int64?
        var challenge: String?
        var reason: String?
        var retryAt: Int64?
        var attempt: Int?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(eventKeys, first: &first, seen: &seen) {
            switch key {
            case 0: sequence = try json.null() ? nil : json.int64()
            case 1: appIdentifier = try json.null() ? nil : json.string()
            case 2: download = try json.null() ? nil : downloadDescription(&json)
            case 3: downloadUniqueIdentifier = try json.null() ? nil : json.string()
            case 4: identifier = try json.null() ? nil : json.string()
            case 5: parked = try json.null() ? nil : json.string()
            case 6:
                if try !json.null() {
                    guard let value = DownloadEvent.Kind(rawValue: try json.string()) else {
                        throw JSONCursor.Invalid()
                    }
                    kind = value
                }
            case 7: errorDomain = try json.null() ? nil : json.string()
            case 8: errorCode = try json.null() ? nil : json.int()
            case 9: errorMessage = try json.null() ? nil : json.string()
            case 10: offset = try json.null() ? nil : json.int64()
            case 11: isForeground = try json.null() ? nil : json.bool()
            case 12: bytesOnDisk = try json.null() ? nil : json.int64()
            case 13: bytesWritten = try json.null() ? nil : json.int64()
            case 14: totalBytes = try json.null() ? nil : json.int64()
            case 15: destination = try json.null() ? nil : json.string()
            case 16: size = try json.null() ? nil : json.int64()
            case 17: challenge = try json.null() ? nil : json.string()
            case 18: reason = try json.null() ? nil : json.string()
            case 19: retryAt = try json.null() ? nil : json.int64()
            case 20: attempt = try json.null() ? nil : json.int()
            default: try json.skipValue()
            }
        }
        guard let sequence, let downloadUniqueIdentifier, let identifier, let kind else { throw JSONCursor.Invalid() }
        let change: DownloadChange
        switch kind {
        case .began:
            guard let offset, let isForeground else { throw JSONCursor.Invalid() }
            change = .began(offset: offset, isForeground: isForeground)
        case .paused:
            guard let bytesOnDisk else { throw JSONCursor.Invalid() }
            change = .paused(bytesOnDisk: bytesOnDisk)
        case .progress:
            guard let bytesWritten else { throw JSONCursor.Invalid() }
            change = .progress(bytesWritten: bytesWritten, totalBytes: totalBytes)
        case .finished:
            guard let destination, let size else { throw JSONCursor.Invalid() }
            change = .finished(destination: destination, size: size)
        case .failed:
            guard let errorDomain, let errorCode, let errorMessage else { throw JSONCursor.Invalid() }
            change = .failed(domain: errorDomain, code: errorCode, message: errorMessage)
        case .needsCredentials:
            guard let challenge else { throw JSONCursor.Invalid() }
            change = .needsCredentials(challenge: challenge)
        case .waiting:
            guard let reason, let retryAt, let attempt else { throw JSONCursor.Invalid() }
            change = .waiting(reason: reason, retryAt: retryAt, attempt: attempt)
        }
        return DownloadEvent(
            sequence: sequence, downloadUniqueIdentifier: downloadUniqueIdentifier, identifier: identifier,
            change: change, appIdentifier: appIdentifier, download: download, parked: parked)
    }

    // MARK: ClientMessage

    private static let clientKeys: [StaticString] = ["id", "type", "download", "throughSequence"]

    /// `schedule` and `acknowledgeEvents`; every other request is `JSONDecoder`'s.
    private static func clientMessage(_ json: inout JSONCursor) throws(JSONCursor.Invalid) -> ClientMessage {
        var id: UInt64?
        var type: String?
        var download: DownloadDescription?
        var throughSequence: Int64?
        try json.beginObject()
        var first = true
        var seen: UInt64 = 0
        while let key = try json.nextKey(clientKeys, first: &first, seen: &seen) {
            switch key {
            case 0: id = try json.null() ? nil : json.uint64()
            case 1: type = try json.string()
            case 2: download = try json.null() ? nil : downloadDescription(&json)
            case 3: throughSequence = try json.null() ? nil : json.int64()
            default: try json.skipValue()
            }
        }
        guard let id else { throw JSONCursor.Invalid() }
        switch type {
        case "schedule":
            guard let download else { throw JSONCursor.Invalid() }
            return ClientMessage(id: id, request: .schedule(download))
        case "acknowledgeEvents":
            guard let throughSequence else { throw JSONCursor.Invalid() }
            return ClientMessage(id: id, request: .acknowledgeEvents(throughSequence: throughSequence))
        default: throw JSONCursor.Invalid()
        }
    }
}
