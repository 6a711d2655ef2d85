internal import GRDB

/// The store's schema and how a file is brought to it.
///
/// Each version is one GRDB migration, named `v<N>`, that ends by setting `PRAGMA user_version`
/// to N. A shipped migration never changes: a later version appends `v2`, `v3`, … . A file whose
/// `user_version` (or migration list) is beyond what this build knows is refused with
/// ``BAStoreError/Code/schemaTooNew`` rather than opened: an older basd would otherwise write rows
/// a newer one misreads. See `docs/state.md`.
enum Schema {
    /// The newest schema version this build knows.
    static let currentVersion = 13

    /// The migrations, oldest first.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: v1)
            try db.execute(sql: "PRAGMA user_version = 1")
        }
        migrator.registerMigration("v2") { db in
            try db.execute(sql: v2)
            try db.execute(sql: "PRAGMA user_version = 2")
        }
        migrator.registerMigration("v3") { db in
            try db.execute(sql: v3)
            try db.execute(sql: "PRAGMA user_version = 3")
        }
        migrator.registerMigration("v4") { db in
            try db.execute(sql: v4)
            try db.execute(sql: "PRAGMA user_version = 4")
        }
        migrator.registerMigration("v5") { db in
            try db.execute(sql: v5)
            try db.execute(sql: "PRAGMA user_version = 5")
        }
        migrator.registerMigration("v6") { db in
            try db.execute(sql: v6)
            try db.execute(sql: "PRAGMA user_version = 6")
        }
        migrator.registerMigration("v7") { db in
            try db.execute(sql: v7)
            try db.execute(sql: "PRAGMA user_version = 7")
        }
        migrator.registerMigration("v8") { db in
            try db.execute(sql: v8)
            try db.execute(sql: "PRAGMA user_version = 8")
        }
        migrator.registerMigration("v9") { db in
            try db.execute(sql: v9)
            try db.execute(sql: "PRAGMA user_version = 9")
        }
        migrator.registerMigration("v10") { db in
            try db.execute(sql: v10)
            try db.execute(sql: "PRAGMA user_version = 10")
        }
        migrator.registerMigration("v11") { db in
            try db.execute(sql: v11)
            try db.execute(sql: "PRAGMA user_version = 11")
        }
        migrator.registerMigration("v12") { db in
            try db.execute(sql: v12)
            try db.execute(sql: "PRAGMA user_version = 12")
        }
        migrator.registerMigration("v13") { db in
            try db.execute(sql: v13)
            try db.execute(sql: "PRAGMA user_version = 13")
        }
        return migrator
    }

    /// Version 1. States are `BADownload.State` raw values: -1 failed, 0 created, 1 waiting,
    /// 2 downloading, 3 finished; 0, 1 and 2 are *active*. Timestamps are GRDB's date text,
    /// `YYYY-MM-DD HH:MM:SS.SSS` in UTC, which sorts in time order.
    static let v1 = """
        CREATE TABLE app (
            bundle_identifier    TEXT    NOT NULL PRIMARY KEY,
            version              TEXT    NOT NULL,
            app_group_identifier TEXT,
            app_directory        TEXT    NOT NULL,
            extension_path       TEXT,
            launched             INTEGER NOT NULL DEFAULT 0 CHECK (launched IN (0, 1)),
            registered_at        TEXT    NOT NULL,
            updated_at           TEXT    NOT NULL
        );

        CREATE TABLE download (
            unique_identifier    TEXT    NOT NULL PRIMARY KEY,
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            identifier           TEXT    NOT NULL,
            url                  TEXT    NOT NULL,
            headers              TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(headers)),
            app_group_identifier TEXT,
            priority             INTEGER NOT NULL,
            essential            INTEGER NOT NULL CHECK (essential IN (0, 1)),
            expected_size        INTEGER CHECK (expected_size > 0),
            sha256               TEXT,
            state                INTEGER NOT NULL CHECK (state BETWEEN -1 AND 3),
            foreground           INTEGER NOT NULL DEFAULT 0 CHECK (foreground IN (0, 1)),
            bytes_on_disk        INTEGER NOT NULL DEFAULT 0 CHECK (bytes_on_disk >= 0),
            validator            TEXT,
            partial_path         TEXT,
            destination_path     TEXT,
            attempts             INTEGER NOT NULL DEFAULT 0,
            error_domain         TEXT,
            error_code           INTEGER,
            error_message        TEXT,
            created_at           TEXT    NOT NULL,
            updated_at           TEXT    NOT NULL
        );
        -- At most one active download per (app, identifier): scheduling a duplicate fails, while
        -- ended ones (finished, failed) may share the identifier with a new one.
        CREATE UNIQUE INDEX download_active_identifier ON download (app_id, identifier)
            WHERE state IN (0, 1, 2);
        -- What a restarted basd resumes, in queue order.
        CREATE INDEX download_active_order ON download (essential DESC, priority DESC, created_at)
            WHERE state IN (0, 1, 2);
        -- An app's downloads; also the cascade from app.
        CREATE INDEX download_app ON download (app_id, created_at);

        CREATE TABLE event (
            sequence             INTEGER PRIMARY KEY AUTOINCREMENT,
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            download_id          TEXT    NOT NULL REFERENCES download (unique_identifier) ON DELETE CASCADE,
            kind                 TEXT    NOT NULL
                CHECK (kind IN ('began', 'paused', 'progress', 'finished', 'failed', 'needsCredentials')),
            payload              TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(payload)),
            created_at           TEXT    NOT NULL,
            delivered_at         TEXT
        );
        -- An app's undelivered events in order: the delivery query.
        CREATE INDEX event_undelivered ON event (app_id, sequence) WHERE delivered_at IS NULL;
        -- Pruning delivered events by age.
        CREATE INDEX event_delivered ON event (delivered_at) WHERE delivered_at IS NOT NULL;
        -- The cascade from download, and coalescing a download's progress events.
        CREATE INDEX event_download ON event (download_id, kind);

        CREATE TABLE extension_run (
            id                   INTEGER PRIMARY KEY AUTOINCREMENT,
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            event                TEXT    NOT NULL
                CHECK (event IN ('install', 'update', 'periodic', 'finished', 'failed', 'challenge')),
            verdict              TEXT    NOT NULL,
            detail               TEXT,
            started_at           TEXT    NOT NULL,
            duration_ms          INTEGER NOT NULL CHECK (duration_ms >= 0)
        );
        CREATE INDEX extension_run_app ON extension_run (app_id, started_at);
        """
}

extension Schema {
    /// Version 2 (issue 5, the app life cycle): an app's Info.plist restrictions and what it has
    /// used of its pre-launch allowances, its manifest URL and basd's scheduling state; a
    /// download's pre-launch restriction (byte limit and allow-list, JSON); the finished files
    /// basd tracks for purging.
    static let v2 = """
        ALTER TABLE app ADD COLUMN manifest_url TEXT;
        ALTER TABLE app ADD COLUMN restrictions TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(restrictions));
        ALTER TABLE app ADD COLUMN allowance_used INTEGER NOT NULL DEFAULT 0 CHECK (allowance_used >= 0);
        ALTER TABLE app ADD COLUMN essential_allowance_used INTEGER NOT NULL DEFAULT 0
            CHECK (essential_allowance_used >= 0);
        ALTER TABLE app ADD COLUMN scheduling TEXT CHECK (scheduling IS NULL OR json_valid(scheduling));

        ALTER TABLE download ADD COLUMN restriction TEXT CHECK (restriction IS NULL OR json_valid(restriction));

        CREATE TABLE asset (
            download_id          TEXT    NOT NULL PRIMARY KEY
                REFERENCES download (unique_identifier) ON DELETE CASCADE,
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            identifier           TEXT    NOT NULL,
            delivered_path       TEXT    NOT NULL,
            device               INTEGER NOT NULL,
            inode                INTEGER NOT NULL,
            size                 INTEGER NOT NULL CHECK (size >= 0),
            mtime_ns             INTEGER NOT NULL,
            sha256               TEXT    NOT NULL,
            finished_at          TEXT    NOT NULL
        );
        CREATE INDEX asset_app ON asset (app_id);
        """

}

extension Schema {
    /// Version 3 (issues 12 and 13): extension runs of a `languageChange` content request (SQLite
    /// cannot change a CHECK, so the table is rebuilt), and an index to prune ended downloads by age.
    static let v3 = """
        CREATE TABLE extension_run_v3 (
            id                   INTEGER PRIMARY KEY AUTOINCREMENT,
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            event                TEXT    NOT NULL
                CHECK (event IN ('install', 'update', 'periodic', 'languageChange', 'finished', 'failed', 'challenge')),
            verdict              TEXT    NOT NULL,
            detail               TEXT,
            started_at           TEXT    NOT NULL,
            duration_ms          INTEGER NOT NULL CHECK (duration_ms >= 0)
        );
        INSERT INTO extension_run_v3 SELECT * FROM extension_run;
        DROP TABLE extension_run;
        ALTER TABLE extension_run_v3 RENAME TO extension_run;
        CREATE INDEX extension_run_app ON extension_run (app_id, started_at);

        -- Pruning ended downloads by age.
        CREATE INDEX download_ended ON download (updated_at) WHERE state IN (-1, 3);
        """
}

extension Schema {
    /// Version 4 (issue 19, a poisoned event): an event the app's extension failed on too often
    /// is *parked*: it stays undelivered for the app's next connection, but the extension is
    /// handed the app's later events past it. `parked_at` says when, `parked_reason` why.
    static let v4 = """
        ALTER TABLE event ADD COLUMN parked_at TEXT;
        ALTER TABLE event ADD COLUMN parked_reason TEXT;
        -- The parked events still owed, for listings.
        CREATE INDEX event_parked ON event (download_id) WHERE parked_at IS NOT NULL AND delivered_at IS NULL;
        """
}

extension Schema {
    /// Version 5 (issue 21, asset packs): one row per app with packs (its signing key and the
    /// last manifest check) and one row per (app, pack): what the server lists, the version on
    /// disk, the version being assembled. Never a row per chunk or file: progress is what is
    /// verified on disk.
    static let v5 = """
        CREATE TABLE pack_app (
            app_id               TEXT    NOT NULL PRIMARY KEY
                REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            public_key           TEXT,
            checked_at           TEXT,
            check_error          TEXT
        );
        CREATE TABLE asset_pack (
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            pack_id              TEXT    NOT NULL,
            entry                TEXT    CHECK (entry IS NULL OR json_valid(entry)),
            local_version        INTEGER,
            target               TEXT    CHECK (target IS NULL OR json_valid(target)),
            requested            INTEGER NOT NULL DEFAULT 0,
            failure              TEXT,
            updated_at           TEXT    NOT NULL,
            PRIMARY KEY (app_id, pack_id)
        );
        """

    /// Version 7 (issue 22): an app that never declared `BAHasManagedAssetPacks` but used
    /// `AssetPackManager` opted into managed asset packs; remembered, so that its next update
    /// keeps them.
    static let v7 = """
        ALTER TABLE pack_app ADD COLUMN opted_in_by_use INTEGER NOT NULL DEFAULT 0;
        """

    /// Version 8 (issue 23): a finished file kept until the app's next launch, and why
    /// (`firstLaunch`, `essential`: BAPurge's `LaunchHold`; NULL: the usual purge rules). The files
    /// of an app that has not launched yet were all delivered before its first launch; which of a
    /// launched app's files are an essential download not seen by a launch since is not known, so
    /// they keep the usual rules.
    static let v8 = """
        ALTER TABLE asset ADD COLUMN held_until_launch TEXT
            CHECK (held_until_launch IS NULL OR held_until_launch IN ('firstLaunch', 'essential'));
        UPDATE asset SET held_until_launch = 'firstLaunch'
            WHERE app_id IN (SELECT bundle_identifier FROM app WHERE launched = 0);
        """
}

extension Schema {
    /// Version 6 (issue 22, `ManagedDownloaderExtension`): an extension's `shouldDownload(_:)` is
    /// a call of its own in `extension_run` (a rebuild: the `event` check is a constraint), and a
    /// pack it declined for an install or update is marked `declined` (1), so that neither that
    /// event nor a periodic check downloads it until the app asks for it or the next install or
    /// update asks the extension again.
    static let v6 = """
        CREATE TABLE extension_run_v6 (
            id                   INTEGER PRIMARY KEY AUTOINCREMENT,
            app_id               TEXT    NOT NULL REFERENCES app (bundle_identifier) ON DELETE CASCADE,
            event                TEXT    NOT NULL
                CHECK (event IN ('install', 'update', 'periodic', 'languageChange', 'finished', 'failed', 'challenge',
                                 'shouldDownload')),
            verdict              TEXT    NOT NULL,
            detail               TEXT,
            started_at           TEXT    NOT NULL,
            duration_ms          INTEGER NOT NULL CHECK (duration_ms >= 0)
        );
        INSERT INTO extension_run_v6 SELECT * FROM extension_run;
        DROP TABLE extension_run;
        ALTER TABLE extension_run_v6 RENAME TO extension_run;
        CREATE INDEX extension_run_app ON extension_run (app_id, started_at);
        ALTER TABLE asset_pack ADD COLUMN declined INTEGER NOT NULL DEFAULT 0 CHECK (declined IN (0, 1));
        """

    /// `download.allows_expensive`: 0 when the request must not use an expensive (metered)
    /// network (`URLRequest.allowsExpensiveNetworkAccess` and its kin false).
    static let v9 = """
        ALTER TABLE download ADD COLUMN allows_expensive INTEGER NOT NULL DEFAULT 1 CHECK (allows_expensive IN (0, 1));
        """

    /// Version 10 (issue 33, pack metadata you can trust): `pack_trust` keeps, per app and
    /// publisher key (base64; '' for an app without one), the highest download-manifest sequence
    /// accepted and the SHA-256 of its bytes, so that an older one (a rollback or a replay) or
    /// another with the same sequence (a fork) is refused. It has no reference to `app`: it
    /// outlives `ba uninstall`, so a reinstalled app cannot be rolled back either. A pack failure,
    /// and a manifest check's, has its error code (`docs/protocol.md`); `interrupted_starts` counts
    /// the consecutive basd starts that found the pack's job in flight after an abnormal exit (at
    /// 3 it is parked); `key_warning` says when an update removed the app's signing key.
    static let v10 = """
        CREATE TABLE pack_trust (
            app_id               TEXT    NOT NULL,
            public_key           TEXT    NOT NULL,
            sequence             INTEGER NOT NULL CHECK (sequence >= 1),
            manifest_sha256      TEXT    NOT NULL,
            accepted_at          TEXT    NOT NULL,
            PRIMARY KEY (app_id, public_key)
        );
        ALTER TABLE asset_pack ADD COLUMN failure_code INTEGER;
        ALTER TABLE asset_pack ADD COLUMN interrupted_starts INTEGER NOT NULL DEFAULT 0
            CHECK (interrupted_starts >= 0);
        ALTER TABLE pack_app ADD COLUMN check_error_code INTEGER;
        ALTER TABLE pack_app ADD COLUMN key_warning TEXT;
        """

    /// Version 11 (issue 35, a local test loop): `pack_override` holds the download manifest URL
    /// the user pointed an app at (`ba packs override APP URL`), used instead of its
    /// `BAManifestURL` until cleared. One row per app with packs; it goes with the app's packs.
    static let v11 = """
        CREATE TABLE pack_override (
            app_id               TEXT    PRIMARY KEY NOT NULL,
            url                  TEXT    NOT NULL,
            set_at               TEXT    NOT NULL
        );
        """

    /// Version 12 (issue 35, localized packs): `pack_language` keeps, per app with packs, the
    /// language the app set (`AssetPackManager.resolvedLanguage`; NULL: none, the user's
    /// preferred languages decide), the preferred languages the app last sent (a JSON array of
    /// BCP-47 tags; NULL: basd's environment's), and the language basd last put in place (a
    /// change from it is a language change: the extension is told).
    static let v12 = """
        CREATE TABLE pack_language (
            app_id     TEXT PRIMARY KEY NOT NULL,
            override   TEXT CHECK (override IS NULL OR length(override) BETWEEN 2 AND 35),
            preferred  TEXT CHECK (preferred IS NULL OR length(preferred) <= 4096),
            resolved   TEXT CHECK (resolved IS NULL OR length(resolved) BETWEEN 2 AND 35)
        );
        """

    /// Version 13 (issue 35, self-hosted asset packs): `download.asset_pack` is 1 for an asset pack
    /// download (`AssetPack.download(for:)` of a self-hosted `AssetPackManifest`): `url` is the
    /// pack's index, `sha256` the index's SHA-256, and the pack service installs the pack into the
    /// app group instead of the engine fetching one file.
    static let v13 = """
        ALTER TABLE download ADD COLUMN asset_pack INTEGER NOT NULL DEFAULT 0 CHECK (asset_pack IN (0, 1));
        """
}
