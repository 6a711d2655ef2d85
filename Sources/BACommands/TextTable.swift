/// A plain-text table: a header row and rows, each column padded to its widest cell.
package struct TextTable {
    var header: [String]
    var rows: [[String]] = []

    package init(_ header: [String]) { self.header = header }

    package mutating func append(_ row: [String]) { rows.append(row) }

    /// The table, two spaces between columns, no trailing spaces; each line starts with `indent`.
    package func render(header showsHeader: Bool = true, indent: String = "") -> String {
        let all = showsHeader ? [header] + rows : rows
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        return all.map { row in
            var line = indent
            for (column, cell) in row.enumerated() {
                let last = column == row.count - 1 || column >= widths.count - 1
                line += last ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            return line
        }.joined(separator: "\n")
    }
}

/// Byte counts and durations for people.
package enum HumanReadable {
    /// `512 B`, `1.5 KiB`, `3.2 GiB`.
    package static func bytes(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        guard unit > 0 else { return "\(bytes) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    /// A progress bar of `width` characters, `#` for the done `fraction` (0…1) and `-` for the rest.
    static func bar(_ fraction: Double, width: Int = 30) -> String {
        let filled = Int(min(1, max(0, fraction)) * Double(width))
        return String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
    }

    /// `45s`, `3m 2s`, `4h 3m`, `2d 4h`.
    static func duration(seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        let days = total / 86_400
        let hours = total % 86_400 / 3600
        let minutes = total % 3600 / 60
        let rest = total % 60
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)m" }
        if minutes > 0 { return "\(minutes)m \(rest)s" }
        return "\(rest)s"
    }
}
