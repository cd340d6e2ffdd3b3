import Platform
import Settings

/// The one check that every GPIO line configured anywhere (LEDs, buzzer, status LED, Wiegand D0/D1 and
/// the panel's inputs, the door relay, ...) has one owner. A chip named two ways (label, name, path) and
/// a line named two ways (GPIO17 and 17) are the same when the chip can be opened to resolve them;
/// otherwise they are compared as written.
public enum LineOwners {
    /// The first line claimed twice, as one message naming both claimants, or nil.
    /// "[door-relay] door-relay: line 17 on gpiochip0 is also claimed by [wiegand] wiegand-d0; ...".
    public static func conflict(_ claims: [GPIOLineClaim], calls: (any GpiodCalls)?) -> String? {
        enum LineKey: Hashable { case offset(Int), name(String) }
        struct Key: Hashable { var chip: String; var line: LineKey }
        var chips: [String: GPIOChip?] = [:]
        func chip(_ text: String) -> GPIOChip? {
            if let known = chips[text] { return known }
            let opened = calls.flatMap { try? GPIOChip.open(text, calls: $0).get() }
            chips[text] = opened
            return opened
        }
        var owners: [Key: GPIOLineClaim] = [:]
        for claim in claims {
            let open = chip(claim.chip)
            var line: LineKey
            switch claim.line {
            case .offset(let o): line = .offset(o)
            case .name(let n): line = .name(n)
            }
            if let open, case .success(let o) = open.offset(of: claim.line, flag: "--" + claim.option) { line = .offset(o) }
            let key = Key(chip: open?.name ?? claim.chip, line: line)
            if let first = owners[key] {
                let same = first.chip == claim.chip && first.line == claim.line
                let as_ = same ? "" : " (as \(first.line) on \(first.chip))"
                return "\(claim.owner): line \(claim.line) on \(claim.chip) is also claimed by \(first.owner)\(as_); each GPIO line needs one owner"
            }
            owners[key] = claim
        }
        return nil
    }
}
