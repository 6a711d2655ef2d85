import Foundation

extension PackStaging {
    /// The mode a pack file is installed with, whatever mode its index gives (issue 33): 0444,
    /// or 0555 when any x bit is set. Never writable, so the app cannot change a verified file by
    /// accident; never unreadable, so an index that gives 0000 or 0200 still installs a file the
    /// app can read (`docs/packs.md`, "Where the files are").
    ///
    /// ```swift
    /// PackStaging.installedMode(0o644)  // 0o444
    /// PackStaging.installedMode(0o200)  // 0o444
    /// PackStaging.installedMode(0o100)  // 0o555
    /// ```
    package static func installedMode(_ indexMode: UInt32) -> mode_t {
        indexMode & 0o111 != 0 ? 0o555 : 0o444
    }
}
