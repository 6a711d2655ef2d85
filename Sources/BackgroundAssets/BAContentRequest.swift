/// Why the system is asking an extension for downloads.
public enum BAContentRequest: Int, Sendable, CaseIterable {
    /// The app was just installed (essential downloads are allowed).
    case install = 1
    /// The app was just updated (essential downloads are allowed).
    case update = 2
    /// A periodic check for new content (essential downloads are not allowed).
    case periodic = 3
    /// The user's preferred languages changed: ask for content in the new language (essential
    /// downloads are not allowed). On Linux, basd asks when the user's locale changes
    /// (`ba simulate language-change` triggers it by hand).
    case languageChange = 4
}
