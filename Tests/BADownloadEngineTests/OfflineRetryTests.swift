import BADownloadEngine
import Testing

/// Waiting for the network is not failing: requests that could not reach the host do not count
/// toward the retry budget, and a wait can be cut short.
@Suite struct OfflineRetryTests {
    let policy = RetryPolicy(
        initialDelay: .seconds(1), maximumDelay: .seconds(600), giveUpAfter: .seconds(100), maximumAttempts: 3)

    /// Starts the machine again after its wait and ends the request with `outcome` at `now`.
    func attempt(
        _ machine: inout TransferStateMachine, _ outcome: TransferStateMachine.Outcome, now: Duration
    ) -> TransferStateMachine.Action {
        _ = machine.start(bytesOnDisk: 0, validator: nil)
        return machine.requestEnded(outcome, policy: policy, now: now, random: 0.999, bytesOnDisk: 0, validator: nil)
    }

    @Test("a day offline (100 connect failures, over the time budget) never fails a background download")
    func offlineNeverGivesUp() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        let offline = TransferStateMachine.Outcome.retryable(
            reason: "could not connect", retryAfter: nil, isConnectivity: true)
        for index in 0..<100 {
            let action = attempt(&machine, offline, now: .seconds(index * 900))
            guard case .waitUntil(let until, _, _) = action else {
                Issue.record("attempt \(index): \(action)")
                return
            }
            // Capped at a minute, whatever the policy's maximum.
            #expect(until - .seconds(index * 900) <= .seconds(60))
        }
        #expect(machine.offlineAttempts == 100)
        // Then real failures: the budget (3 attempts) counts only them.
        let serverError = TransferStateMachine.Outcome.retryable(
            reason: "503", retryAfter: nil, isConnectivity: false)
        if case .waitUntil = attempt(&machine, serverError, now: .seconds(100_000)) {} else { Issue.record("1st") }
        if case .waitUntil = attempt(&machine, serverError, now: .seconds(100_010)) {} else { Issue.record("2nd") }
        guard case .fail(let error) = attempt(&machine, serverError, now: .seconds(100_020)) else {
            Issue.record("the third real failure gives up")
            return
        }
        #expect(error.code == .retriesExhausted)
        #expect(error.message.contains("gave up after 3 attempts"), "\(error.message)")
    }

    @Test("retryNow ends a wait, and only a wait")
    func retryNow() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        let notWaiting = machine.retryNow()
        #expect(!notWaiting)
        _ = attempt(
            &machine, .retryable(reason: "could not connect", retryAfter: nil, isConnectivity: true), now: .zero)
        let waited = machine.retryNow()
        #expect(waited)
        #expect(machine.state == .queued)
        let again = machine.retryNow()
        #expect(!again)
    }

    @Test("the offline wait grows like the backoff and stops at a minute")
    func offlineDelay() {
        #expect(policy.offlineDelay(afterAttempt: 1, random: 0.999) <= .seconds(1))
        #expect(policy.offlineDelay(afterAttempt: 4, random: 0.999) > .seconds(7))
        #expect(policy.offlineDelay(afterAttempt: 40, random: 0.999) <= .seconds(60))
        #expect(policy.offlineDelay(afterAttempt: 40, random: 0) == .milliseconds(1))
    }
}
