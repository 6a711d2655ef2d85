import BAPacks

// What an install waits for (executor).
extension PackService {
    /// The essential packs of `event` for `app` that its extension did not decline, by ID (of
    /// localized ones, those of the app's language only).
    func essentialPacks(app: String, event: PackManifest.InstallationEvent) -> [String] {
        let rows =
            logged("asset packs of \(app): the essential packs cannot be listed") { try self.rows(app: app) } ?? []
        let choice = rows.contains { $0.entry?.language != nil } ? languageChoice(app: app)?.choice : nil
        return rows.compactMap { row in
            if row.entry?.language != nil, choice?.fit(row) != .chosen { return nil }
            guard !row.declined, case .essential(let events)? = row.entry?.downloadPolicy,
                events.contains(event)
            else { return nil }
            return row.packID
        }.sorted()
    }
}
