/// Why the system is asking an extension for downloads.
public enum BAContentRequest: Int, Sendable, CaseIterable {
    /// The app was just installed (essential downloads are allowed).
    case install = 1
    /// The app was just updated (essential downloads are allowed).
    case update = 2
    /// A periodic check for new content (essential downloads are not allowed).
    case periodic = 3
}
