import Testing
@testable import BAPurge
