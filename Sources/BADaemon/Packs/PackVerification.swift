import BAPacks

/// `ba packs verify`: a local version's files against its index (size and SHA-256 of each).
enum PackVerification {
    /// What does not match, one line per file; empty when every file does.
    static func verify(root: String, index indexPath: String) -> [String] {
        do throws(PackError) {
            return PackInstallation.problems(root: root, index: try PackIndex.read(indexPath))
        } catch {
            return ["\(error): `ba packs ensure --latest` installs it again"]
        }
    }
}
