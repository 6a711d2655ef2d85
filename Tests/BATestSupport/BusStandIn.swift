import Foundation

/// Stand-ins for the desktop's D-Bus services, run by ``TestBus/standIn(_:)`` with Debian's
/// python3 and python3-dbus: each exports the real service's name, object path, interface and
/// properties, and changes a property (emitting `PropertiesChanged`) when the test writes
/// `{"set": {"path": …, "interface": …, "name": …, "type": "u", "value": 1}}` to its standard
/// input (it prints `set NAME` once the signal is sent). `listen` mode prints every signal of one
/// interface as a JSON line instead.
package enum BusStandIn {
    /// NetworkManager (`org.freedesktop.NetworkManager` at /org/freedesktop/NetworkManager):
    /// `Metered` (0 unknown, 1 yes, 2 no, 3 guess-yes, 4 guess-no) and `Connectivity`
    /// (0 unknown, 1 none, 2 portal, 3 limited, 4 full).
    package static func networkManager(metered: UInt32, connectivity: UInt32 = 4) -> [String] {
        [
            object(
                name: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
                interface: "org.freedesktop.NetworkManager",
                properties: ["Metered": ("u", metered), "Connectivity": ("u", connectivity), "State": ("u", 70)])
        ]
    }

    /// The line that makes the NetworkManager stand-in's `Metered` `value` (emitting `PropertiesChanged`).
    package static func metered(_ value: UInt32) -> String {
        set(
            path: "/org/freedesktop/NetworkManager", interface: "org.freedesktop.NetworkManager", name: "Metered",
            type: "u", value: value)
    }

    /// power-profiles-daemon under both its names (`net.hadess.PowerProfiles` and
    /// `org.freedesktop.UPower.PowerProfiles`), with `ActiveProfile`.
    package static func powerProfiles(_ profile: String, legacyOnly: Bool = false) -> [String] {
        let legacy = object(
            name: "net.hadess.PowerProfiles", path: "/net/hadess/PowerProfiles", interface: "net.hadess.PowerProfiles",
            properties: ["ActiveProfile": ("s", profile)])
        let current = object(
            name: "org.freedesktop.UPower.PowerProfiles", path: "/org/freedesktop/UPower/PowerProfiles",
            interface: "org.freedesktop.UPower.PowerProfiles", properties: ["ActiveProfile": ("s", profile)])
        return legacyOnly ? [legacy] : [legacy, current]
    }

    /// UPower (`org.freedesktop.UPower` at /org/freedesktop/UPower), with `OnBattery`.
    package static func upower(onBattery: Bool) -> [String] {
        [
            object(
                name: "org.freedesktop.UPower", path: "/org/freedesktop/UPower", interface: "org.freedesktop.UPower",
                properties: ["OnBattery": ("b", onBattery)])
        ]
    }

    /// logind (`org.freedesktop.login1` at /org/freedesktop/login1): `Manager.Inhibit(ssss) → h`
    /// hands out a pipe's write end, printing `inhibited N WHAT MODE`, and prints `released N` once
    /// its holder closed it; `{"sleep": true}` on standard input emits `PrepareForSleep(true)`
    /// (`false` after a resume), printing `sleep true`.
    package static let logind = ["--logind"]

    /// The line that makes the logind stand-in announce a suspend (`true`) or a resume (`false`).
    package static func sleep(_ sleeping: Bool) -> String { #"{"sleep": \#(sleeping)}"# }

    /// Prints each signal of `interface` on the bus as a JSON line
    /// (`{"path": …, "member": …, "args": [...]}`).
    package static func listener(interface: String) -> [String] { ["--listen", interface] }

    /// The line that changes a property of a stand-in.
    package static func set(path: String, interface: String, name: String, type: String, value: Any) -> String {
        let command: [String: Any] = [
            "set": ["path": path, "interface": interface, "name": name, "type": type, "value": value]
        ]
        let data = (try? JSONSerialization.data(withJSONObject: command)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// One exported object, as the script's argument.
    static func object(name: String, path: String, interface: String, properties: [String: (String, Any)]) -> String {
        var values: [String: [Any]] = [:]
        for (key, (type, value)) in properties { values[key] = [type, value] }
        let object: [String: Any] = ["name": name, "path": path, "interface": interface, "properties": values]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The stand-in: `standin.py ADDRESS OBJECT-JSON…` or `standin.py ADDRESS --listen INTERFACE`.
    static let script = #"""
        import json, os, sys
        import dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib

        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(sys.argv[1])
        PROPS = "org.freedesktop.DBus.Properties"
        TYPES = {"u": dbus.UInt32, "i": dbus.Int32, "s": dbus.String, "b": dbus.Boolean, "d": dbus.Double,
                 "x": dbus.Int64, "t": dbus.UInt64}

        def plain(value):
            if isinstance(value, dbus.Boolean): return bool(value)
            if isinstance(value, (dbus.Dictionary, dict)): return {str(k): plain(v) for k, v in value.items()}
            if isinstance(value, (dbus.Array, list, dbus.Struct, tuple)): return [plain(v) for v in value]
            if isinstance(value, (dbus.Double, float)): return float(value)
            if isinstance(value, (dbus.String, dbus.ObjectPath, str)): return str(value)
            return int(value)

        class Exported(dbus.service.Object):
            def __init__(self, path, interface, properties):
                dbus.service.Object.__init__(self, bus, path)
                self.interface = interface
                self.values = {k: TYPES[t](v) for k, (t, v) in properties.items()}

            @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
            def Get(self, interface, name):
                return self.values[name]

            @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
            def GetAll(self, interface):
                return dbus.Dictionary(self.values if interface == self.interface else {}, signature="sv")

            @dbus.service.signal(PROPS, signature="sa{sv}as")
            def PropertiesChanged(self, interface, changed, invalidated):
                pass

        class Login1(dbus.service.Object):
            MANAGER = "org.freedesktop.login1.Manager"

            def __init__(self):
                dbus.service.Object.__init__(self, bus, "/org/freedesktop/login1")
                self.count = 0

            @dbus.service.method(MANAGER, in_signature="ssss", out_signature="h")
            def Inhibit(self, what, who, why, mode):
                read_end, write_end = os.pipe()
                self.count += 1
                number = self.count
                def hung_up(source, condition):
                    print("released %d" % number, flush=True)
                    os.close(read_end)
                    return False
                GLib.io_add_watch(read_end, GLib.PRIORITY_DEFAULT, GLib.IO_HUP | GLib.IO_ERR, hung_up)
                handed = dbus.types.UnixFd(write_end)
                os.close(write_end)
                print("inhibited %d %s %s" % (number, what, mode), flush=True)
                return handed

            @dbus.service.signal(MANAGER, signature="b")
            def PrepareForSleep(self, start):
                pass

        objects = {}
        names = []
        login1 = None
        if sys.argv[2] == "--logind":
            login1 = Login1()
            names.append(dbus.service.BusName("org.freedesktop.login1", bus, do_not_queue=True))
        elif sys.argv[2] == "--listen":
            interface = sys.argv[3]
            def heard(*args, **keywords):
                print(json.dumps({"path": keywords["path"], "member": keywords["member"], "args": plain(list(args))}),
                      flush=True)
            bus.add_signal_receiver(heard, dbus_interface=interface, path_keyword="path", member_keyword="member")
        else:
            for spec in map(json.loads, sys.argv[2:]):
                objects[(spec["path"], spec["interface"])] = Exported(spec["path"], spec["interface"], spec["properties"])
                names.append(dbus.service.BusName(spec["name"], bus, do_not_queue=True))

        def command(source, condition):
            line = sys.stdin.readline()
            if not line:
                loop.quit()
                return False
            order = json.loads(line)
            if "sleep" in order:
                login1.PrepareForSleep(dbus.Boolean(order["sleep"]))
                bus.flush()
                print("sleep " + ("true" if order["sleep"] else "false"), flush=True)
            if "set" in order:
                s = order["set"]
                target = objects[(s["path"], s["interface"])]
                target.values[s["name"]] = TYPES[s["type"]](s["value"])
                target.PropertiesChanged(s["interface"], dbus.Dictionary({s["name"]: target.values[s["name"]]},
                                                                         signature="sv"), dbus.Array([], signature="s"))
                bus.flush()
                print("set " + s["name"], flush=True)
            return True

        GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, command)
        loop = GLib.MainLoop()
        # The match rule of a listener is in place once the bus answered a call made after it.
        bus.get_unique_name()
        bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", [])
        print("ready", flush=True)
        loop.run()
        """#
}
