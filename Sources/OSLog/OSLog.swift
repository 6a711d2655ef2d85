// `import OSLog`, as on Apple's systems: everything of `import os` (Logger, OSLog, os_log,
// OSSignposter). Apple's OSLogStore (reading the system log back) has no equivalent here.
@_exported import os
