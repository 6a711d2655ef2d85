/// The release of swift-background-assets these binaries belong to: `ba --version`,
/// `basd --version`, basd's `User-Agent` and its `status` answer.
package enum ReleaseVersion {
    /// The version string, e.g. `0.1.0`.
    package static let string = "0.1.0"
}
