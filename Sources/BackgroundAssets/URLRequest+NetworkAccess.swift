import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

#if !canImport(Darwin)
    // Apple's `URLRequest.allowsExpensiveNetworkAccess` and `allowsConstrainedNetworkAccess`,
    // which swift-corelibs-foundation lacks, so that Apple's code that sets them compiles and
    // means the same here: a download whose request sets either to false waits while the
    // network is metered (docs/app-client.md).
    //
    // URLRequest is a struct of Foundation's: an extension cannot add a stored property, and
    // corelibs' URLProtocol properties do not travel with a copy. The values live in a header of
    // the request, which every copy keeps; `BAURLDownload` takes it out before the request reaches
    // basd, so the server never sees it from basd (a request handed to URLSession directly sends
    // it: there, as on Apple's platforms, the properties are for the system to enforce).
    extension URLRequest {
        /// The header the two properties live in (`no-expensive`, `no-constrained`).
        static let networkAccessHeader = "X-Background-Assets-Network-Access"

        /// Whether the request may use an expensive network (cellular, a personal hotspot, a
        /// connection NetworkManager reports as metered). Default true. A download whose request
        /// says false waits while the network is metered and starts when it is not.
        public var allowsExpensiveNetworkAccess: Bool {
            get { !networkAccessTokens.contains("no-expensive") }
            set { setNetworkAccessToken("no-expensive", present: !newValue) }
        }

        /// Whether the request may use a constrained network (Low Data Mode on Apple's systems; a
        /// metered connection on Linux). Default true. False: as ``allowsExpensiveNetworkAccess``.
        public var allowsConstrainedNetworkAccess: Bool {
            get { !networkAccessTokens.contains("no-constrained") }
            set { setNetworkAccessToken("no-constrained", present: !newValue) }
        }

        private var networkAccessTokens: Set<String> {
            guard let value = value(forHTTPHeaderField: Self.networkAccessHeader) else { return [] }
            return Set(value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }

        private mutating func setNetworkAccessToken(_ token: String, present: Bool) {
            var tokens = networkAccessTokens
            if present { tokens.insert(token) } else { tokens.remove(token) }
            setValue(
                tokens.isEmpty ? nil : tokens.sorted().joined(separator: ", "),
                forHTTPHeaderField: Self.networkAccessHeader)
        }
    }
#endif

extension URLRequest {
    /// Whether the download of this request may run on a metered network: every one of
    /// `allowsCellularAccess`, `allowsExpensiveNetworkAccess` and `allowsConstrainedNetworkAccess`.
    var baAllowsMeteredNetwork: Bool {
        allowsCellularAccess && allowsExpensiveNetworkAccess && allowsConstrainedNetworkAccess
    }

    /// The request's header fields without the one the network-access properties live in, sorted by name.
    var baHeaderFields: [DownloadHeaderField] {
        (allHTTPHeaderFields ?? [:]).filter {
            $0.key.caseInsensitiveCompare(Self.baNetworkAccessHeaderName) != .orderedSame
        }
        .sorted { $0.key < $1.key }.map { DownloadHeaderField(name: $0.key, value: $0.value) }
    }

    /// The header of the network-access properties (none on Apple's platforms, which store them).
    static var baNetworkAccessHeaderName: String {
        #if canImport(Darwin)
            ""
        #else
            networkAccessHeader
        #endif
    }
}

/// One header field of a download's request.
struct DownloadHeaderField {
    var name: String
    var value: String
}
