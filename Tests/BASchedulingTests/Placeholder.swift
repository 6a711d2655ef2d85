import Testing
@testable import BAScheduling
