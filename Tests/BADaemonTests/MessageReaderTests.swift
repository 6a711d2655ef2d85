import BACore
import BADaemonProtocol
import BATestSupport
import Foundation
import Testing

/// basd and the app read their most frequent messages without `JSONDecoder`; what the direct
/// reader makes of a message must be exactly what `JSONDecoder` makes of it, and when it is not
/// sure (or the JSON is bad) it must answer nil, so `JSONDecoder` decides (and makes the error).
@Suite("the direct message reader matches JSONDecoder")
struct MessageReaderTests {
    // MARK: Helpers

    /// What JSONDecoder makes of `json`, or nil when it throws.
    static func foundation<Message: Decodable>(_ json: [UInt8], as type: Message.Type) -> Message? {
        try? JSONDecoder().decode(Message.self, from: Data(json))
    }

    /// `message` as JSONEncoder writes it with `formatting` (unsorted keys come in hash order,
    /// pretty printing puts whitespace between every token).
    static func encoded(_ message: some Encodable, _ formatting: JSONEncoder.OutputFormatting) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        return Array(try encoder.encode(message))
    }

    static let formattings: [JSONEncoder.OutputFormatting] = [
        [.sortedKeys], [], [.prettyPrinted], [.prettyPrinted, .sortedKeys], [.withoutEscapingSlashes],
    ]

    static func expectServerMatch(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let json = Array(text.utf8)
        let expected = try #require(foundation(json, as: ServerMessage.self), "JSONDecoder reads \(text)")
        let read = MessageReader.readServerMessage(json)
        #expect(read == expected, "\(text)", sourceLocation: sourceLocation)
    }

    static func expectClientMatch(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let json = Array(text.utf8)
        let expected = try #require(foundation(json, as: ClientMessage.self), "JSONDecoder reads \(text)")
        let read = MessageReader.readClientMessage(json)
        #expect(read == expected, "\(text)", sourceLocation: sourceLocation)
    }

    static let clientMessages: [ClientMessage] = [
        ClientMessage(id: 1, request: .schedule(DownloadDescription(identifier: "a", url: "https://127.0.0.1/a"))),
        ClientMessage(id: UInt64.max, request: .schedule(MessageWriterTests.download)),
        ClientMessage(id: 0, request: .acknowledgeEvents(throughSequence: 0)),
        ClientMessage(id: 3, request: .acknowledgeEvents(throughSequence: Int64.max)),
        ClientMessage(id: 4, request: .acknowledgeEvents(throughSequence: Int64.min)),
    ]

    // MARK: Same values

    @Test func everyCoveredServerMessageInEveryFormattingReadsAsJSONDecoderReadsIt() throws {
        for message in MessageWriterTests.messages {
            for formatting in Self.formattings {
                let json = try Self.encoded(message, formatting)
                let read = try #require(MessageReader.readServerMessage(json), "\(message) is covered")
                #expect(read == message, "\(String(decoding: json, as: UTF8.self))")
                #expect(read == Self.foundation(json, as: ServerMessage.self))
            }
        }
    }

    @Test func messageWriterOutputRoundTrips() throws {
        for message in MessageWriterTests.messages {
            let written = try #require(MessageWriter.writeServerMessage(message))
            #expect(MessageReader.readServerMessage(written) == message)
            // And through a frame: the codec takes the direct path.
            let frame = try DaemonProtocol.encode(message)
            #expect(try DaemonProtocol.decodeServerMessage(frame.dropFirst(DaemonProtocol.headerLength)) == message)
        }
    }

    @Test func extremeIntegersAndEveryControlCharacterRoundTripThroughTheWriter() throws {
        let controls = String(String.UnicodeScalarView((0..<0x20).map { Unicode.Scalar(UInt8($0)) }))
        for number: Int64 in [.min, .min + 1, -10, -9, -1, 0, 1, 9, 10, 99, 100, .max - 1, .max] {
            let message = ServerMessage.event(
                DownloadEvent(
                    sequence: number, downloadUniqueIdentifier: controls, identifier: "/\\\"",
                    change: .progress(bytesWritten: number, totalBytes: number)))
            let written = try #require(MessageWriter.writeServerMessage(message))
            #expect(written == (try DaemonProtocol.encodeWithFoundation(message)), "\(number)")
            #expect(MessageReader.readServerMessage(written) == message)
        }
    }

    @Test func scheduleAndAcknowledgeReadAsJSONDecoderReadsThem() throws {
        for message in Self.clientMessages {
            for formatting in Self.formattings {
                let json = try Self.encoded(message, formatting)
                let read = try #require(MessageReader.readClientMessage(json), "\(message) is covered")
                #expect(read == message)
                #expect(read == Self.foundation(json, as: ClientMessage.self))
            }
            let frame = try DaemonProtocol.encode(message)
            #expect(try DaemonProtocol.decodeClientMessage(frame.dropFirst(DaemonProtocol.headerLength)) == message)
        }
    }

    @Test func optionalFieldsPresentAbsentOrNullAndUnknownKeysAnywhere() throws {
        let description = #"{"identifier":"a","url":"u","headers":[],"priority":0,"isEssential":false"#
        // A description with uniqueIdentifier and fileSize left out, null, or there; unknown keys ignored.
        for extra in [
            "", #","uniqueIdentifier":null,"fileSize":null,"sha256":null,"applicationGroupIdentifier":null"#,
            #","uniqueIdentifier":"U","fileSize":-1,"sha256":"ab","applicationGroupIdentifier":"g""#,
            #","state":7,"isWellFormed":"no","x":{"y":[1,-2,true,false,null,"z",{}],"w":[]}"#,
            #","headers2":[{"name":1}]"#,
        ] {
            try Self.expectClientMatch(#"{"id":5,"type":"schedule","download":"# + description + extra + "}}")
        }
        // Headers with unknown keys, in any order.
        try Self.expectClientMatch(
            #"{"download":{"headers":[{"value":"v","name":"n","x":0},{"name":"","value":""}],"#
                + #""url":"u","priority":-9223372036854775808,"isEssential":true,"identifier":"i"},"#
                + #""type":"schedule","id":18446744073709551615,"throughSequence":-1}"#)
        try Self.expectClientMatch(#"{"type":"acknowledgeEvents","id":1,"throughSequence":-5,"downloads":[1]}"#)
        // A DownloadInfo's optionals: null is absent.
        let info =
            #"{"uniqueIdentifier":"U","state":-1,"isForeground":true,"bytesOnDisk":0,"download":{"identifier":"a","#
            + #""url":"u","headers":[],"priority":0,"isEssential":false}"#
        for extra in [
            "",
            #","appIdentifier":null,"attempts":null,"errorCode":null,"errorMessage":null,"waitingFor":null,"#
                + #""nextAttemptAt":null,"parkedEvent":null,"queuePosition":null"#,
            #","appIdentifier":"x","attempts":2,"errorCode":-3,"errorMessage":"m","waitingFor":"space","#
                + #""parkedEvent":"p","queuePosition":3,"extra":[[[]]]"#,
        ] {
            try Self.expectServerMatch(
                #"{"id":1,"more":false,"result":{"downloads":["# + info + extra + #"}],"type":"downloads"},"#
                    + #""type":"response"}"#)
            try Self.expectServerMatch(
                #"{"type":"response","more":true,"id":2,"result":{"type":"downloadList","status":"x","#
                    + #""downloadList":{"notShown":3,"downloads":["# + info + extra + "}," + info + "}]}}}")
        }
        // "more": null is absent (not partial); an ok result with unknown keys.
        try Self.expectServerMatch(#"{"type":"response","id":0,"more":null,"result":{"type":"ok","code":"x"}}"#)
        try Self.expectServerMatch(#"{"type":"response","id":0,"result":{"type":"downloads","downloads":[]}}"#)
    }

    @Test func everyChangeKindReadsAsJSONDecoderReadsIt() throws {
        let common = #""sequence":3,"downloadUniqueIdentifier":"U","identifier":"i""#
        for fields in [
            #""kind":"began","offset":0,"isForeground":false"#,
            #""kind":"paused","bytesOnDisk":9223372036854775807"#,
            #""kind":"progress","bytesWritten":1"#, #""kind":"progress","bytesWritten":1,"totalBytes":null"#,
            #""kind":"progress","bytesWritten":1,"totalBytes":2"#,
            #""kind":"finished","destination":"\/d","size":0"#,
            #""kind":"failed","errorDomain":"D","errorCode":-1,"errorMessage":"m","domain":1,"code":"x""#,
            #""kind":"needsCredentials","challenge":"Basic realm=\"r\"""#,
            #""kind":"waiting","reason":"http:\/\/127.0.0.1:9\/a: Couldn't connect","retryAt":1800000000123,"attempt":2"#,
            // Another kind's fields are not read.
            #""kind":"paused","bytesOnDisk":1,"offset":2,"isForeground":true,"challenge":"c","size":5"#,
        ] {
            try Self.expectServerMatch(#"{"type":"event","event":{"# + common + "," + fields + "}}")
            try Self.expectServerMatch(
                #"{"event":{"# + fields + "," + common
                    + #","appIdentifier":"a","parked":null,"download":{"identifier":"a","url":"u","headers":[],"#
                    + #""priority":0,"isEssential":false,"fileSize":1}},"resulting":5,"type":"event"}"#)
        }
    }

    @Test func trickyStringsAndWhitespace() throws {
        for string in [
            #"a\"b\\c\/d"#, #"\b\f\n\r\t"#, #"\u0000\u001f\u007f"#, #"\u00e9\u00E9é"#, #"\uD83D\uDE00😀"#,
            #"\ud83d\ude00"#, #"\u2028\uFFFF\uffff"#, #"\u0041"#, "", #"\\u0041"#, "日本語",
        ] {
            try Self.expectServerMatch(
                #"{"type":"event","event":{"sequence":0,"downloadUniqueIdentifier":""# + string
                    + #"","identifier":"x","kind":"needsCredentials","challenge":""# + string + #""}}"#)
        }
        // Whitespace between every token, escaped keys.
        try Self.expectServerMatch(
            " \r\n\t{ \"t\\u0079pe\" :\t\"event\" , \"event\"\n:\r{\"sequence\" : -1 , \"kind\" : \"paused\" ,"
                + " \"bytesOnDisk\" : 0 , \"downloadUniqueIdentifier\" : \"\\/\" , \"identifier\":\"i\"  } }\n ")
        try Self.expectClientMatch(" {\"id\" :1,\"type\":\"acknowledgeEvents\", \"throughSequence\" :\n2 }\t")
        // A non-contiguous payload (the codec copies it) reads the same.
        let json = Array(#"{"type":"response","id":0,"result":{"type":"ok"}}"#.utf8)
        #expect(MessageReader.readServerMessage(json.lazy.map { $0 }) == .response(requestId: 0, result: .ok))
    }

    // MARK: Nil: not sure, or bad

    /// JSON that JSONDecoder reads but the direct reader leaves to it.
    @Test func whatItDoesNotCoverIsLeftToJSONDecoder() throws {
        let ok = #""result":{"type":"ok"}"#
        for text in [
            // Other result and request types.
            #"{"type":"response","id":1,"result":{"type":"error","code":1,"message":"m"}}"#,
            #"{"type":"response","id":1,"result":{"type":"welcome","welcome":{"protocolVersion":1,"#
                + #""daemonVersion":"v"}}}"#,
            // A fraction, an exponent, -0 (JSONDecoder reads them as the integers they stand for).
            #"{"type":"response","id":1.0,"# + ok + "}", #"{"type":"response","id":1e0,"# + ok + "}",
            #"{"type":"event","event":{"sequence":-0,"downloadUniqueIdentifier":"U","identifier":"i","#
                + #""kind":"paused","bytesOnDisk":0}}"#,
            #"{"type":"response","id":1,"# + ok + #","x":0.5}"#,
            // nextAttemptAt, a Double.
            #"{"type":"response","id":1,"result":{"type":"downloads","downloads":[{"uniqueIdentifier":"U","#
                + #""state":1,"isForeground":true,"bytesOnDisk":0,"nextAttemptAt":1700000000.25,"#
                + #""download":{"identifier":"a","url":"u","headers":[],"priority":0,"isEssential":false}}]}}"#,
            // Duplicate keys (JSONDecoder takes the first).
            #"{"type":"response","id":1,"id":2,"# + ok + "}",
            #"{"type":"response","type":"event","id":1,"# + ok + "}",
            // Keys JSONDecoder does not read for this type, with values of another type (this reader reads
            // every key it knows, whatever the type).
            #"{"type":"event","id":-1,"event":{"sequence":1,"downloadUniqueIdentifier":"U","identifier":"i","#
                + #""kind":"paused","bytesOnDisk":0,"offset":"x"}}"#,
            #"{"type":"event","id":"x","event":{"sequence":1,"downloadUniqueIdentifier":"U","identifier":"i","#
                + #""kind":"paused","bytesOnDisk":0}}"#,
            #"{"type":"response","id":1,"result":{"type":"ok","downloads":"x"}}"#,
            // JSONDecoder takes a trailing comma, and does not check what it skips; this reader is strict.
            #"{"type":"response","id":1,"result":{"type":"ok"},}"#,
            #"{"type":"response","id":1,"# + ok + #","x":"\q"}"#, #"{"type":"response","id":1,"# + ok + #","x":01}"#,
            // Nesting deeper than the reader goes.
            #"{"type":"response","id":1,"# + ok + #","x":"# + String(repeating: "[", count: 40)
                + String(repeating: "]", count: 40) + "}",
        ] {
            let json = Array(text.utf8)
            let expected = try #require(Self.foundation(json, as: ServerMessage.self), "JSONDecoder reads \(text)")
            #expect(MessageReader.readServerMessage(json) == nil, "\(text)")
            #expect(try DaemonProtocol.decodeServerMessage(json) == expected)
        }
        for text in [
            #"{"id":1,"type":"hello","protocolVersion":1,"client":{"role":"cli","pid":1}}"#,
            #"{"id":1,"type":"status"}"#, #"{"id":1,"type":"acknowledgeEvents","throughSequence":1.0}"#,
            #"{"id":1,"type":"acknowledgeEvents","throughSequence":1,"download":[1]}"#,
            #"{"id":1,"type":"schedule","throughSequence":"x","download":{"identifier":"a","url":"u","#
                + #""headers":[],"priority":0,"isEssential":false}}"#,
        ] {
            let json = Array(text.utf8)
            let expected = try #require(Self.foundation(json, as: ClientMessage.self), "JSONDecoder reads \(text)")
            #expect(MessageReader.readClientMessage(json) == nil, "\(text)")
            #expect(try DaemonProtocol.decodeClientMessage(json) == expected)
        }
    }

    /// Bad JSON, or JSON that is not the message: nil here, and the codec's error as before.
    @Test func malformedInputIsNil() throws {
        let event = #"{"type":"event","event":{"sequence":1,"downloadUniqueIdentifier":"U","identifier":"i","#
        for text in [
            "", " ", "{", "[]", "null", #"{"type":"response","id":1,"result":{"type":"ok"}"#,
            #"{"type":"response","id":1,"result":{"type":"ok"}}x"#,
            #"{"type":"response","id":1,"result":{"type":"ok"}} {}"#,
            #"{"type":"response",,"id":1}"#,
            #"{"type":"response" "id":1,"result":{"type":"ok"}}"#,
            #"{"type":"response","id":1,"result":{"type":"ok"}]"#,
            #"{'type':"response","id":1,"result":{"type":"ok"}}"#, #"{type:"response","id":1,"result":{"type":"ok"}}"#,
            // Out of range, negative ids.
            #"{"type":"response","id":18446744073709551616,"result":{"type":"ok"}}"#,
            #"{"type":"response","id":-1,"result":{"type":"ok"}}"#,
            event + #""kind":"paused","bytesOnDisk":9223372036854775808}}"#,
            event + #""kind":"paused","bytesOnDisk":-9223372036854775809}}"#,
            event + #""kind":"paused","bytesOnDisk":99999999999999999999999}}"#,
            // Bad escapes, lone surrogates, raw control characters.
            event + #""kind":"needsCredentials","challenge":"\x"}}"#,
            event + #""kind":"needsCredentials","challenge":"\u12"}}"#,
            event + #""kind":"needsCredentials","challenge":"\u12G4"}}"#,
            event + #""kind":"needsCredentials","challenge":"\ud800"}}"#,
            event + #""kind":"needsCredentials","challenge":"\ud800\u0041"}}"#,
            event + #""kind":"needsCredentials","challenge":"\udc00\ud800"}}"#,
            event + "\"kind\":\"needsCredentials\",\"challenge\":\"a\u{01}b\"}}",
            event + "\"kind\":\"needsCredentials\",\"challenge\":\"a\nb\"}}",
            // Missing, null or mistyped required fields; unknown kinds and types.
            event + #""kind":"paused"}}"#, event + #""kind":"paused","bytesOnDisk":null}}"#,
            event + #""kind":"paused","bytesOnDisk":"1"}}"#, event + #""kind":"began","offset":1}}"#,
            event + #""kind":"began","offset":1,"isForeground":1}}"#,
            event + #""kind":"failed","domain":"d","#
                + #""code":1,"message":"m"}}"#, event + #""kind":"exploded"}}"#,
            #"{"type":"response","id":1,"result":{"type":"downloads"}}"#,
            #"{"type":"response","id":1,"result":{"type":"downloads","downloads":[{}]}}"#,
            #"{"type":"response","id":1,"result":{"type":"downloadList","downloadList":{"downloads":[]}}}"#,
            #"{"type":"response","id":1,"result":{"type":"nope"}}"#, #"{"type":"nope"}"#,
            #"{"type":"response","result":{"type":"ok"}}"#, #"{"type":null,"id":1,"result":{"type":"ok"}}"#,
            #"{"type":"response","id":1,"result":{"type":"ok"},"more":1}"#,
        ] {
            let json = Array(text.utf8)
            #expect(Self.foundation(json, as: ServerMessage.self) == nil, "JSONDecoder refuses \(text)")
            #expect(MessageReader.readServerMessage(json) == nil, "\(text)")
            #expect(throws: DaemonProtocolError.self) { try DaemonProtocol.decodeServerMessage(json) }
        }
        // Invalid UTF-8: a lone continuation byte, an overlong form, a surrogate, a truncated sequence.
        for bytes: [UInt8] in [[0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]] {
            let json =
                Array(#"{"type":"event","event":{"sequence":1,"downloadUniqueIdentifier":""#.utf8) + bytes
                + Array(#"","identifier":"i","kind":"paused","bytesOnDisk":0}}"#.utf8)
            #expect(MessageReader.readServerMessage(json) == nil, "\(bytes)")
        }
        // Client messages: missing id, bad download, out-of-range sequence, unknown type.
        for text in [
            #"{"type":"acknowledgeEvents","throughSequence":1}"#,
            #"{"id":1,"type":"acknowledgeEvents","throughSequence":9223372036854775808}"#,
            #"{"id":1,"type":"acknowledgeEvents"}"#, #"{"id":1,"type":"schedule"}"#,
            #"{"id":1,"type":"schedule","download":{"identifier":"a","url":"u","headers":[],"priority":0}}"#,
            #"{"id":1,"type":"schedule","download":{"identifier":"a","url":"u","headers":[{"name":"n"}],"#
                + #""priority":0,"isEssential":false}}"#,
            #"{"id":1,"type":"explode"}"#,
        ] {
            let json = Array(text.utf8)
            #expect(Self.foundation(json, as: ClientMessage.self) == nil, "JSONDecoder refuses \(text)")
            #expect(MessageReader.readClientMessage(json) == nil, "\(text)")
            #expect(throws: DaemonProtocolError.self) { try DaemonProtocol.decodeClientMessage(json) }
        }
    }

    @Test func everyTruncationOfAMessageIsNil() throws {
        for message in MessageWriterTests.messages.prefix(8) {
            let json = try #require(MessageWriter.writeServerMessage(message))
            for end in 0..<json.count {
                #expect(MessageReader.readServerMessage(json[..<end]) == nil, "\(message) cut at \(end)")
            }
        }
        let json = try Self.encoded(Self.clientMessages[1], [.sortedKeys])
        for end in 0..<json.count { #expect(MessageReader.readClientMessage(json[..<end]) == nil) }
    }

    /// Random byte changes: whatever the reader answers is nil or what JSONDecoder answers.
    @Test func mutatedMessagesAreNilOrWhatJSONDecoderReads() throws {
        var random = SeededGenerator(state: 20)
        let alphabet = Array(#"{}[]":,\/ u0123456789-.eEtrfalsn"#.utf8) + [0x00, 0x1f, 0x80, 0xc3, 0xa9, 0xff]
        var agreed = 0
        for message in MessageWriterTests.messages {
            let json = try #require(MessageWriter.writeServerMessage(message))
            for _ in 0..<200 {
                var mutated = json
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let position = Int.random(in: 0..<mutated.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: mutated[position] = alphabet.randomElement(using: &random)!
                    case 1: mutated.remove(at: position)
                    default: mutated.insert(alphabet.randomElement(using: &random)!, at: position)
                    }
                }
                guard let read = MessageReader.readServerMessage(mutated) else { continue }
                #expect(read == Self.foundation(mutated, as: ServerMessage.self), "\(Array(mutated))")
                agreed += 1
            }
        }
        // Some mutations keep the message valid (a changed digit or letter): the comparison ran.
        #expect(agreed > 100)
    }
}
