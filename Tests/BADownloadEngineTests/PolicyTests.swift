import BACore
import Testing

@testable import BADownloadEngine

@Suite struct ResponseDecisionTests {
    func head(_ status: Int, _ fields: [String: String] = [:]) -> ResponseHead {
        ResponseHead(
            status: status, reason: "",
            fields: Dictionary(uniqueKeysWithValues: fields.map { ($0.key.lowercased(), $0.value) }))
    }
    let url = "https://cdn.example.com/f"

    @Test func aMatchingPartialContentIsAppended() {
        let decision = ResponseDecision.decide(
            head(206, ["Content-Range": "bytes 100-999/1000", "ETag": "\"v1\""]), requestedOffset: 100,
            sentValidator: "\"v1\"",
            expectedSize: 1000, url: url)
        #expect(decision == .write(offset: 100, total: 1000, validator: "\"v1\""))
    }

    @Test func aRangeAtTheWrongOffsetIsNeverSpliced() {
        let decision = ResponseDecision.decide(
            head(206, ["Content-Range": "bytes 0-999/1000"]), requestedOffset: 100, sentValidator: "\"v1\"",
            expectedSize: nil, url: url)
        guard case .restartWithoutRange(let reason) = decision else {
            Issue.record("\(decision)")
            return
        }
        #expect(reason.contains("starting at 0, but 100 was requested"))
    }

    @Test func aRangeOfAnotherVersionIsNeverSpliced() {
        let decision = ResponseDecision.decide(
            head(206, ["Content-Range": "bytes 100-999/1000", "ETag": "\"v2\""]), requestedOffset: 100,
            sentValidator: "\"v1\"",
            expectedSize: nil, url: url)
        guard case .restartWithoutRange = decision else {
            Issue.record("\(decision)")
            return
        }
    }

    /// The one resume rule, as a table: a 206 is appended only when it repeats every validator the
    /// partial file was fetched with, strong and byte-equal (issue 19, cases a–d and their kin).
    @Test(
        "a 206 is appended only when it repeats every stored validator",
        arguments: [
            // (stored validators, the 206's ETag, its Last-Modified, appended?)
            ("\"v1\"", "\"v1\"", nil, true),
            ("\"v1\"\nMon, 01 Jan 2024 00:00:00 GMT", "\"v1\"", "Mon, 01 Jan 2024 00:00:00 GMT", true),
            ("Mon, 01 Jan 2024 00:00:00 GMT", nil, "Mon, 01 Jan 2024 00:00:00 GMT", true),
            // (a) no validator at all after a Last-Modified resume
            ("Mon, 01 Jan 2024 00:00:00 GMT", nil, nil, false),
            // (b) only a Last-Modified after an ETag resume
            ("\"v1\"", nil, "Mon, 01 Jan 2024 00:00:00 GMT", false),
            // (c) the weak W/"v1" after the strong "v1"
            ("\"v1\"", "W/\"v1\"", nil, false),
            // (d) the same ETag but a new Last-Modified
            ("\"v1\"\nMon, 01 Jan 2024 00:00:00 GMT", "\"v1\"", "Tue, 02 Jan 2024 00:00:00 GMT", false),
            // a changed tag, a changed date, a date where a tag was, nothing where both were
            ("\"v1\"", "\"v2\"", nil, false),
            ("Mon, 01 Jan 2024 00:00:00 GMT", nil, "Tue, 02 Jan 2024 00:00:00 GMT", false),
            ("\"v1\"\nMon, 01 Jan 2024 00:00:00 GMT", nil, nil, false),
            ("\"v1\"\nMon, 01 Jan 2024 00:00:00 GMT", nil, "Mon, 01 Jan 2024 00:00:00 GMT", false),
            // no stored validator: nothing to check the bytes against
            ("", "\"v1\"", nil, false),
        ] as [(String, String?, String?, Bool)])
    func theResumeRule(stored: String, etag: String?, lastModified: String?, appended: Bool) {
        var fields = ["Content-Range": "bytes 100-999/1000"]
        if let etag { fields["ETag"] = etag }
        if let lastModified { fields["Last-Modified"] = lastModified }
        let decision = ResponseDecision.decide(
            head(206, fields), requestedOffset: 100, sentValidator: stored.isEmpty ? nil : stored, expectedSize: nil,
            url: url)
        if appended {
            #expect(decision == .write(offset: 100, total: 1000, validator: stored))
        } else {
            guard case .restartWithoutRange = decision else {
                Issue.record(
                    "\(stored) / \(String(describing: etag)) / \(String(describing: lastModified)): \(decision)")
                return
            }
        }
    }

    @Test func theStoredFormKeepsBothValidatorsAndReadsOlderOnes() throws {
        var both = head(200, ["ETag": "\"v1\"", "Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT"])
        #expect(both.validator == "\"v1\"\nMon, 01 Jan 2024 00:00:00 GMT")
        let stored = try #require(both.validator)
        let parsed = try #require(ResumeValidator(stored: stored))
        #expect(parsed.ifRange == "\"v1\"", "If-Range carries the entity tag when there is one")
        #expect(parsed.mismatch(in: both) == nil)
        both.fields["last-modified"] = nil
        #expect(parsed.mismatch(in: both) != nil)
        // One line, as earlier versions stored it: either kind.
        #expect(ResumeValidator(stored: "\"old\"") == ResumeValidator(entityTag: "\"old\"", lastModified: nil))
        #expect(ResumeValidator(stored: "Sun, 06 Nov 1994 08:49:37 GMT")?.ifRange == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(ResumeValidator(stored: "W/\"weak\"") == nil, "a weak tag validates nothing")
        #expect(head(200, ["ETag": "W/\"x\""]).validator == nil)
    }

    @Test func aWholeFileAnswerToARangeStartsFresh() {
        #expect(
            ResponseDecision.decide(
                head(200, ["Content-Length": "1000"]), requestedOffset: 100, sentValidator: "\"v1\"", expectedSize: nil,
                url: url)
                == .write(offset: 0, total: 1000, validator: nil))
    }

    @Test func aDeclaredSizeOtherThanExpectedFailsBeforeDownloading() {
        guard
            case .fail(let error) = ResponseDecision.decide(
                head(200, ["Content-Length": "5"]), requestedOffset: 0, sentValidator: nil, expectedSize: 1000, url: url
            )
        else {
            Issue.record("expected fail")
            return
        }
        #expect(error.code == .sizeMismatch)
        #expect(error.message.contains("declared 5 bytes, expected 1000"))
    }

    @Test func fourSixteenAtTheEndIsComplete() {
        #expect(
            ResponseDecision.decide(
                head(416, ["Content-Range": "bytes */1000"]), requestedOffset: 1000, sentValidator: "\"v\"",
                expectedSize: 1000, url: url)
                == .alreadyComplete(total: 1000))
        guard
            case .restartWithoutRange = ResponseDecision.decide(
                head(416, ["Content-Range": "bytes */900"]), requestedOffset: 1000, sentValidator: "\"v\"",
                expectedSize: nil, url: url)
        else {
            Issue.record("a partial file longer than the resource starts over")
            return
        }
    }

    @Test func statusClasses() {
        #expect(
            ResponseDecision.decide(
                head(302, ["Location": "/x"]), requestedOffset: 0, sentValidator: nil, expectedSize: nil, url: url)
                == .redirect(location: "/x"))
        #expect(
            ResponseDecision.decide(
                head(503, ["Retry-After": "7"]), requestedOffset: 0, sentValidator: nil, expectedSize: nil, url: url)
                == .retry(reason: "server answered 503 for \(url)", retryAfter: "7"))
        #expect(
            ResponseDecision.decide(
                head(401, ["WWW-Authenticate": "Basic realm=\"a\""]), requestedOffset: 0, sentValidator: nil,
                expectedSize: nil, url: url) == .needsCredentials(challenge: "Basic realm=\"a\""))
        guard
            case .fail(let error) = ResponseDecision.decide(
                head(404), requestedOffset: 0, sentValidator: nil, expectedSize: nil, url: url)
        else {
            Issue.record("404 fails")
            return
        }
        #expect(error.httpStatus == 404 && error.code == .serverStatus)
    }

    @Test func headParsing() {
        var head = ResponseHead()
        for line in [
            "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 206 Partial Content\r\n", "Content-Range: bytes 5-9/10\r\n",
            "ETag: \"abc\"\r\n",
        ] {
            let ended = head.consume(line: line)
            #expect(!ended)
        }
        let ended = head.consume(line: "\r\n")
        #expect(ended, "the blank line after a final status ends the head")
        #expect(
            head.status == 206 && ResumeValidator(head)?.entityTag == "\"abc\""
                && head["content-range"] == "bytes 5-9/10")
        var weak = ResponseHead()
        _ = weak.consume(line: "HTTP/1.1 200 OK\r\n")
        _ = weak.consume(line: "ETag: W/\"x\"\r\n")
        _ = weak.consume(line: "Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n")
        #expect(ResumeValidator(weak)?.entityTag == nil && weak.validator == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(
            ContentRange("bytes 0-9/10") != nil && ContentRange("bytes */10")?.total == 10
                && ContentRange("bytes 9-0/10") == nil)
    }
}

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(
        initialDelay: .seconds(1), maximumDelay: .seconds(60), giveUpAfter: .seconds(300), maximumAttempts: 10)

    @Test func exponentialBackoffWithFullJitter() {
        #expect(policy.delay(afterAttempt: 1, retryAfter: nil, failingFor: .zero, random: 0.999_999)! <= .seconds(1))
        #expect(policy.delay(afterAttempt: 3, retryAfter: nil, failingFor: .zero, random: 0.5) == .seconds(2))
        #expect(policy.delay(afterAttempt: 9, retryAfter: nil, failingFor: .zero, random: 1) == .seconds(60), "capped")
        #expect(
            policy.delay(afterAttempt: 2, retryAfter: nil, failingFor: .zero, random: 0) == .milliseconds(1),
            "never zero")
    }

    @Test func retryAfterWinsAndIsCapped() {
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(42), failingFor: .zero, random: 0.1) == .seconds(42))
        #expect(
            policy.delay(afterAttempt: 1, retryAfter: .seconds(4200), failingFor: .zero, random: 0.1) == .seconds(60))
        #expect(RetryPolicy.parseRetryAfter("120", nowUnixSeconds: 0) == .seconds(120))
        #expect(
            RetryPolicy.parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", nowUnixSeconds: 784_111_770) == .seconds(7))
        #expect(RetryPolicy.parseRetryAfter("soon", nowUnixSeconds: 0) == nil)
    }

    @Test func theBudgetEnds() {
        #expect(policy.delay(afterAttempt: 10, retryAfter: nil, failingFor: .zero, random: 0.5) == nil, "attempts")
        #expect(
            policy.delay(afterAttempt: 2, retryAfter: .seconds(30), failingFor: .seconds(290), random: 0.5) == nil,
            "time")
    }
}

@Suite struct StateMachineTests {
    let policy = RetryPolicy(
        initialDelay: .seconds(1), maximumDelay: .seconds(8), giveUpAfter: .seconds(60), maximumAttempts: 4)

    @Test func aResumeUsesTheValidatorOrStartsOver() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        #expect(
            machine.start(bytesOnDisk: 500, validator: "\"v\"")
                == .startRequest(url: "https://a.example.com/f", offset: 500, validator: "\"v\""))
        var fresh = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        #expect(
            fresh.start(bytesOnDisk: 500, validator: nil)
                == .startRequest(url: "https://a.example.com/f", offset: 0, validator: nil))
    }

    @Test func everyRedirectHopIsChecked() {
        var machine = TransferStateMachine(
            url: "https://a.example.com/f", isForeground: false,
            allowList: HostAllowList(["a.example.com", "*.cdn.example.com"]))
        _ = machine.start(bytesOnDisk: 0, validator: nil)
        let hop1 = machine.requestEnded(
            .redirect(location: "https://x.cdn.example.com/f", resolved: "https://x.cdn.example.com/f"), policy: policy,
            now: .zero,
            random: 0.5, bytesOnDisk: 0, validator: nil)
        #expect(hop1 == .startRequest(url: "https://x.cdn.example.com/f", offset: 0, validator: nil))
        guard
            case .fail(let error) = machine.requestEnded(
                .redirect(location: "https://evil.example.net/f", resolved: "https://evil.example.net/f"),
                policy: policy, now: .zero,
                random: 0.5, bytesOnDisk: 0, validator: nil)
        else {
            Issue.record("hop 2 must be refused")
            return
        }
        #expect(error.code == .notAllowed)
        #expect(error.message.contains("redirect hop 2") && error.message.contains("evil.example.net"))
    }

    @Test func aRedirectToPlainHTTPIsRefused() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        _ = machine.start(bytesOnDisk: 0, validator: nil)
        guard
            case .fail(let error) = machine.requestEnded(
                .redirect(location: "http://a.example.com/f", resolved: "http://a.example.com/f"), policy: policy,
                now: .zero, random: 0.5,
                bytesOnDisk: 0, validator: nil)
        else {
            Issue.record("downgrade must be refused")
            return
        }
        #expect(error.message.contains("plain http"))
    }

    @Test func retriesBackOffThenGiveUp() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        var now = Duration.zero
        _ = machine.start(bytesOnDisk: 0, validator: nil)
        for attempt in 1...3 {
            guard
                case .waitUntil(let until, let number, _) = machine.requestEnded(
                    .retryable(reason: "503", retryAfter: nil, isConnectivity: false), policy: policy, now: now,
                    random: 0.5, bytesOnDisk: 0,
                    validator: nil)
            else {
                Issue.record("attempt \(attempt) should wait")
                return
            }
            #expect(number == attempt)
            now = until
            _ = machine.start(bytesOnDisk: 0, validator: nil)
        }
        guard
            case .fail(let error) = machine.requestEnded(
                .retryable(reason: "503", retryAfter: nil, isConnectivity: false), policy: policy, now: now,
                random: 0.5, bytesOnDisk: 0,
                validator: nil)
        else {
            Issue.record("the fourth failure ends it")
            return
        }
        #expect(error.code == .retriesExhausted)
    }

    @Test func foregroundFailsFastOnConnectivity() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: true, allowList: nil)
        _ = machine.start(bytesOnDisk: 0, validator: nil)
        guard
            case .fail(let error) = machine.requestEnded(
                .retryable(reason: "connect refused", retryAfter: nil, isConnectivity: true), policy: policy,
                now: .zero, random: 0.5,
                bytesOnDisk: 0, validator: nil)
        else {
            Issue.record("foreground fails fast")
            return
        }
        #expect(error.code == .network)
    }

    @Test func credentialsAreAskedOnceThenAWrongOneFails() {
        var machine = TransferStateMachine(url: "https://a.example.com/f", isForeground: false, allowList: nil)
        _ = machine.start(bytesOnDisk: 0, validator: nil)
        #expect(
            machine.requestEnded(
                .needsCredentials(challenge: "Basic"), policy: policy, now: .zero, random: 0, bytesOnDisk: 0,
                validator: nil) == .askForCredentials(challenge: "Basic"))
        #expect(
            machine.credentialsProvided(true, bytesOnDisk: 0, validator: nil)
                == .startRequest(url: "https://a.example.com/f", offset: 0, validator: nil))
        guard
            case .fail(let error) = machine.requestEnded(
                .needsCredentials(challenge: "Basic"), policy: policy, now: .zero, random: 0, bytesOnDisk: 0,
                validator: nil)
        else {
            Issue.record("a second 401 fails")
            return
        }
        #expect(error.code == .authentication)
    }

    /// Every list must allow the host; the refusal names the first list that does not (basd's).
    @Test(arguments: [
        ("https://cdn.example.com/a", [] as [HostAllowList], nil as String?),
        ("https://cdn.example.com/a", [HostAllowList(["cdn.example.com"])], nil),
        (
            "https://cdn.example.com/a", [HostAllowList(["127.0.0.1"], owner: "basd's allowedHosts setting")],
            "host 'cdn.example.com' is not in the allow-list of basd's allowedHosts setting (127.0.0.1)"
        ),
        (
            "https://cdn.example.com/a",
            [HostAllowList(["*.example.com"], owner: "basd's allowedHosts setting"), HostAllowList(["other.example"])],
            "host 'cdn.example.com' is not in the allow-list (other.example)"
        ),
        (
            "https://cdn.example.com/a",
            [HostAllowList(["*.example.com"], owner: "machine"), HostAllowList(["cdn.example.com"])], nil
        ),
        (
            "http://[::1]:8080/a", [HostAllowList(["127.0.0.1", "::1"], owner: "machine")], nil
        ),
        (
            "http://cdn.example.com/a", [HostAllowList(["cdn.example.com"])],
            "URL 'http://cdn.example.com/a' uses plain http; use https (http is allowed only for loopback hosts)"
        ),
    ])
    func urlPolicyWithSeveralLists(url: String, lists: [HostAllowList], reason: String?) {
        #expect(URLPolicy.check(url, allowLists: lists) == reason)
    }

    @Test func liftingTheAppsListKeepsTheMachines() {
        var machine = TransferStateMachine(
            url: "https://cdn.example.com/f", isForeground: false, allowList: HostAllowList(["cdn.example.com"]),
            allowedHosts: HostAllowList(
                ["cdn.example.com", "mirror.example.com"], owner: "basd's allowedHosts setting"))
        #expect(
            machine.start(bytesOnDisk: 0, validator: nil)
                == .startRequest(url: "https://cdn.example.com/f", offset: 0, validator: nil))
        machine.liftAllowList()
        // The app's list is gone (mirror.example.com was not in it); the machine's still holds.
        let hop1 = machine.requestEnded(
            .redirect(location: "https://mirror.example.com/f", resolved: "https://mirror.example.com/f"),
            policy: policy, now: .zero, random: 0.5, bytesOnDisk: 0, validator: nil)
        #expect(hop1 == .startRequest(url: "https://mirror.example.com/f", offset: 0, validator: nil))
        guard
            case .fail(let error) = machine.requestEnded(
                .redirect(location: "https://evil.example.net/f", resolved: "https://evil.example.net/f"),
                policy: policy, now: .zero, random: 0.5, bytesOnDisk: 0, validator: nil)
        else {
            Issue.record("hop 2 must be refused by the machine's list")
            return
        }
        #expect(error.code == .notAllowed)
        #expect(error.message.contains("basd's allowedHosts setting"), "\(error.message)")
    }

    @Test func aRefusedFirstURLNeverStartsARequest() {
        var machine = TransferStateMachine(
            url: "https://cdn.example.com/f", isForeground: false, allowList: nil,
            allowedHosts: HostAllowList(["127.0.0.1"], owner: "basd's allowedHosts setting"))
        guard case .fail(let error) = machine.start(bytesOnDisk: 0, validator: nil) else {
            Issue.record("the first URL must be refused before any request (and so any name lookup)")
            return
        }
        #expect(error.code == .notAllowed)
        #expect(error.message.contains("not in the allow-list of basd's allowedHosts setting"), "\(error.message)")
    }

    @Test func allowList() {
        let list = HostAllowList(["cdn.example.com", "*.assets.example.com"])
        #expect(list.allows(host: "CDN.example.com"))
        #expect(list.allows(host: "eu.assets.example.com") && list.allows(host: "a.b.assets.example.com"))
        #expect(
            !list.allows(host: "assets.example.com") && !list.allows(host: "evilassets.example.com")
                && !list.allows(host: "example.com"))
    }

    /// An entry with a port allows that port alone (a URL without one has its scheme's); one
    /// without allows every port.
    @Test(arguments: [
        ("http://127.0.0.1:8080/a", true), ("http://127.0.0.1:8081/a", false), ("http://127.0.0.1/a", false),
        ("https://cdn.example.com/a", true), ("https://cdn.example.com:443/a", true),
        ("https://cdn.example.com:80/a", false), ("https://cdn.example.com:8443/a", false),
        ("http://[::1]:9000/a", true), ("http://[::1]:9001/a", false), ("https://x.assets.example.com:8443/a", true),
        ("https://x.assets.example.com/a", false), ("http://localhost:1/a", true), ("http://localhost/a", true),
        ("http://127.0.0.1:80x/a", false), ("http://127.0.0.1:99999/a", false),
    ])
    func allowListWithPorts(url: String, allowed: Bool) throws {
        let list = HostAllowList(
            ["127.0.0.1:8080", "cdn.example.com:443", "[::1]:9000", "*.assets.example.com:8443", "localhost"],
            owner: "basd's allowedHosts setting")
        let refusal = URLPolicy.check(url, allowLists: [list])
        #expect((refusal == nil) == allowed, "\(url): \(refusal ?? "allowed")")
        // A refusal names the port the connection would use (a URL whose port is not one has none).
        if let refusal, ParsedURL(url)?.effectivePort != nil { #expect(refusal.contains(" port "), "\(refusal)") }
    }

    @Test("a URL's port, and the one a connection uses")
    func ports() throws {
        #expect(try #require(ParsedURL("http://h:8080/x")).effectivePort == 8080)
        #expect(try #require(ParsedURL("http://h/x")).effectivePort == 80)
        #expect(try #require(ParsedURL("https://h:/x")).effectivePort == 443)
        #expect(try #require(ParsedURL("https://[::1]:8443")).effectivePort == 8443)
        #expect(try #require(ParsedURL("https://[::1]")).effectivePort == 443)
        #expect(try #require(ParsedURL("http://u:p@h:81/x")).effectivePort == 81)
        #expect(try #require(ParsedURL("http://h:0/x")).effectivePort == nil)
        #expect(try #require(ParsedURL("http://h:65536/x")).effectivePort == nil)
    }
}
