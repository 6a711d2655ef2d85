internal import GRDB

// The store's statements are compiled once per connection and reused (`cachedStatement`): each
// compilation runs GRDB's authorizer over the statement, which was the largest cost of a small
// download's several store calls. Only single statements go through here; the schema's
// multi-statement scripts are executed as they are.
extension Database {
    /// `execute(sql:arguments:)` through the connection's statement cache.
    func executeCached(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}

extension Row {
    static func fetchOneCached(
        _ db: Database, sql: String, arguments: StatementArguments = StatementArguments()
    )
        throws -> Row?
    {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }

    static func fetchAllCached(
        _ db: Database, sql: String, arguments: StatementArguments = StatementArguments()
    )
        throws -> [Row]
    {
        try fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
    }
}

extension DatabaseValueConvertible where Self: StatementColumnConvertible {
    static func fetchOneCached(
        _ db: Database, sql: String, arguments: StatementArguments = StatementArguments()
    )
        throws -> Self?
    {
        try fetchOne(db.cachedStatement(sql: sql), arguments: arguments)
    }
}
