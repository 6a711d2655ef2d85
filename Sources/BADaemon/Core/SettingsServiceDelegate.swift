import BASettings

/// What the ``SettingsService`` reports upward (``BasdServices`` is the delegate), so it does not
/// call the services its settings concern. Called on the executor.
protocol SettingsServiceDelegate: AnyObject {
    /// A changed settings file was loaded: `settings` are in force now.
    func settingsService(_ service: SettingsService, loaded settings: BasdSettings)
}
