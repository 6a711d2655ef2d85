import BACore
import Foundation
internal import GRDB
import Synchronization

// Row <-> value conversions, kept out of the public types so GRDB stays an implementation detail.
// Decoding throws (never traps) on a value of the wrong type: a damaged file is an error, not a
// crash of basd.

/// A column held a value the store never writes.
struct MalformedRow: Error, CustomStringConvertible {
    var table: String
    var column: String
    var value: String
    var description: String { "\(table).\(column) holds \(value), which this version does not understand" }
}

extension StoredApp {
    static let columns =
        """
        bundle_identifier, version, app_group_identifier, app_directory, extension_path, launched, registered_at, \
        updated_at, manifest_url, restrictions, allowance_used, essential_allowance_used, scheduling
        """

    /// Decodes a row that selected ``columns``, in that order (by index: a lookup by name costs
    /// a case-insensitive search per column, and apps are read on every request).
    init(row: Row) throws {
        let restrictionsText: String = try row.decode(atIndex: 9)
        self.init(
            bundleIdentifier: try row.decode(atIndex: 0),
            version: try row.decode(atIndex: 1),
            appGroupIdentifier: try row.decode(atIndex: 2),
            appDirectory: try row.decode(atIndex: 3),
            extensionPath: try row.decode(atIndex: 4),
            launched: try row.decode(atIndex: 5),
            registeredAt: try row.decode(atIndex: 6),
            updatedAt: try row.decode(atIndex: 7),
            manifestURL: try row.decode(atIndex: 8),
            restrictions: try Self.restrictions(restrictionsText),
            allowanceUsed: try row.decode(atIndex: 10),
            essentialAllowanceUsed: try row.decode(atIndex: 11),
            scheduling: try row.decode(atIndex: 12))
    }

    /// The `restrictions` column decoded, remembered by its text: apps are few, their
    /// restrictions change only on install and update, and an app is read on every request.
    private static func restrictions(_ text: String) throws -> Restrictions {
        if let known = decodedRestrictions.withLock({ $0[text] }) { return known }
        let decoded = try JSONDecoder().decode(Restrictions.self, from: Data(text.utf8))
        decodedRestrictions.withLock { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[text] = decoded
        }
        return decoded
    }

    private static let decodedRestrictions = Mutex<[String: Restrictions]>([:])

    /// The `restrictions` column.
    var restrictionsJSON: String {
        get throws { String(decoding: try JSONEncoder().encode(restrictions), as: UTF8.self) }
    }
}

extension StoredDownload {
    static let columns = """
        unique_identifier, app_id, identifier, url, headers, app_group_identifier, priority, essential, \
        expected_size, sha256, state, foreground, bytes_on_disk, validator, partial_path, destination_path, \
        attempts, error_domain, error_code, error_message, created_at, updated_at, restriction, allows_expensive, \
        asset_pack
        """

    /// The JSON shape of one header in the `headers` column.
    private struct HeaderJSON: Codable {
        var name: String
        var value: String
    }

    /// The position of each of ``columns`` in a row selected with them first: decoding by
    /// position, not by name, as GRDB's lookup by name lowercases the name on every call (a
    /// quarter of the CPU of a long `ba downloads`).
    private enum Column: Int {
        case uniqueIdentifier, appIdentifier, identifier, url, headers, applicationGroupIdentifier, priority
        case essential, expectedSize, sha256, state, foreground, bytesOnDisk, validator, partialPath
        case destinationPath, attempts, errorDomain, errorCode, errorMessage, createdAt, updatedAt, restriction
        case allowsExpensive, assetPack
    }

    /// A row whose first columns are ``columns``, in order (every store query selects them so).
    init(row: Row) throws {
        func value<T: DatabaseValueConvertible>(_ column: Column) throws -> T {
            try row.decode(atIndex: column.rawValue)
        }
        let stateValue: Int = try value(.state)
        guard let state = DownloadState(rawValue: stateValue) else {
            throw MalformedRow(table: "download", column: "state", value: String(stateValue))
        }
        let headersText: String = try value(.headers)
        // Most downloads have no headers: no decoder for those.
        let headers =
            headersText == "[]" ? [] : try JSONDecoder().decode([HeaderJSON].self, from: Data(headersText.utf8))
        let domain: String? = try value(.errorDomain)
        let failure = try domain.map { domain in
            Failure(domain: domain, code: try value(.errorCode), message: try value(.errorMessage))
        }
        self.init(
            uniqueIdentifier: try value(.uniqueIdentifier),
            appIdentifier: try value(.appIdentifier),
            identifier: try value(.identifier),
            url: try value(.url),
            headers: headers.map { DownloadDescription.Header(name: $0.name, value: $0.value) },
            applicationGroupIdentifier: try value(.applicationGroupIdentifier),
            priority: try value(.priority),
            isEssential: try value(.essential),
            expectedSize: try value(.expectedSize),
            sha256: try value(.sha256),
            state: state,
            isForeground: try value(.foreground),
            bytesOnDisk: try value(.bytesOnDisk),
            validator: try value(.validator),
            partialPath: try value(.partialPath),
            destinationPath: try value(.destinationPath),
            attempts: try value(.attempts),
            lastError: failure,
            createdAt: try value(.createdAt),
            updatedAt: try value(.updatedAt),
            restriction: try (value(.restriction) as String?).map {
                try JSONDecoder().decode(PreLaunchRestriction.self, from: Data($0.utf8))
            })
        download.allowsExpensiveNetworkAccess = try value(.allowsExpensive)
        download.isAssetPack = try value(.assetPack)
    }

    /// The `restriction` column.
    var restrictionJSON: String? {
        get throws { try restriction.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) } }
    }

    /// The `headers` column: a JSON array of `{"name": …, "value": …}` objects, in order.
    var headersJSON: String {
        get throws {
            if download.headers.isEmpty { return "[]" }
            let data = try JSONEncoder().encode(download.headers.map { HeaderJSON(name: $0.name, value: $0.value) })
            return String(decoding: data, as: UTF8.self)
        }
    }
}

extension StoredEvent {
    static let columns =
        "sequence, app_id, download_id, kind, payload, created_at, delivered_at, parked_at, parked_reason"

    /// Decodes a row that selected ``columns``, in that order.
    init(row: Row) throws {
        let kindText: String = try row.decode(atIndex: 3)
        guard let kind = Kind(rawValue: kindText) else {
            throw MalformedRow(table: "event", column: "kind", value: kindText)
        }
        let payload: String = try row.decode(atIndex: 4)
        let change: DownloadChange
        do {
            change = try EventPayload.decode(kind: kind, payload: payload)
        } catch {
            throw MalformedRow(table: "event", column: "payload", value: payload)
        }
        self.init(
            sequence: try row.decode(atIndex: 0),
            appIdentifier: try row.decode(atIndex: 1),
            downloadUniqueIdentifier: try row.decode(atIndex: 2),
            change: change,
            createdAt: try row.decode(atIndex: 5),
            deliveredAt: try row.decode(atIndex: 6),
            parkedAt: try row.decode(atIndex: 7),
            parkedReason: try row.decode(atIndex: 8))
    }
}

extension StoredExtensionRun {
    static let columns = "id, app_id, event, verdict, detail, started_at, duration_ms"

    init(row: Row) throws {
        let eventText: String = try row.decode(forColumn: "event")
        guard let event = Event(rawValue: eventText) else {
            throw MalformedRow(table: "extension_run", column: "event", value: eventText)
        }
        self.init(
            id: try row.decode(forColumn: "id"),
            appIdentifier: try row.decode(forColumn: "app_id"),
            event: event,
            verdict: try row.decode(forColumn: "verdict"),
            detail: try row.decode(forColumn: "detail"),
            startedAt: try row.decode(forColumn: "started_at"),
            durationMilliseconds: try row.decode(forColumn: "duration_ms"))
    }
}
