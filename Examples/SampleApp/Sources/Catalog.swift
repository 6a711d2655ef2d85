import Foundation

/// The catalog the app's extension downloads first (`Examples/SampleApp/assets/catalog.json`):
/// the large assets the app needs, with URLs relative to the catalog's own.
struct Catalog: Decodable {
    struct Asset: Decodable {
        var identifier: String
        var url: String
        var fileSize: Int?
        var sha256: String?
        var priority: Int?
    }

    var title: String?
    var assets: [Asset]

    static let identifier = "catalog"
    /// The catalog's place on the server, relative to the content base URL.
    static let path = "catalog.json"
}
