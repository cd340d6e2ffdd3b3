import Settings

extension WiegandFormat {
    /// The position of the facility field's first bit (the card field follows it).
    var dataStart: Int {
        switch self {
        case .corporate1000: return 3
        case .raw: return 1
        default: return 2
        }
    }

    enum Parity { case even, odd }

    /// The parity bits, in the order they are computed (a later one may cover an earlier one).
    var parityRules: [(position: Int, parity: Parity, covers: [Int])] {
        switch self {
        case .h10301: return [(1, .even, Array(2...13)), (26, .odd, Array(14...25))]
        case .n10002: return [(1, .even, Array(2...17)), (34, .odd, Array(18...33))]
        case .h10304, .h10302: return [(1, .even, Array(2...19)), (37, .odd, Array(19...36))]
        case .corporate1000:
            return [(2, .even, (3...34).filter { $0 % 3 != 2 }),
                    (35, .odd, (2...33).filter { $0 % 3 != 1 }),
                    (1, .odd, Array(2...35))]
        case .raw: return []
        }
    }

    /// The frame for `facility` and `card`, or nil when either does not fit its field (a format without
    /// a facility field takes only facility 0).
    public func encode(facility: UInt64, card: UInt64) -> WiegandBits? {
        guard facility <= maxFacility, card <= maxCard else { return nil }
        let n = bitCount
        var value: UInt64 = 0
        func set(_ position: Int, _ on: Bool) {
            let mask = UInt64(1) << UInt64(n - position)
            if on { value |= mask } else { value &= ~mask }
        }
        func get(_ position: Int) -> Bool { (value >> UInt64(n - position)) & 1 == 1 }
        // The data field: facility then card, most significant bit first, from dataStart.
        let data = facilityBits == 0 ? card : facility << UInt64(cardBits) | card
        let width = dataBits
        for i in 0..<width {
            set(dataStart + i, (data >> UInt64(width - 1 - i)) & 1 == 1)
        }
        for rule in parityRules {
            let ones = rule.covers.reduce(0) { $0 + (get($1) ? 1 : 0) }
            // Even parity: the bit makes the count of ones (with it) even; odd: odd.
            set(rule.position, rule.parity == .even ? ones % 2 == 1 : ones % 2 == 0)
        }
        return WiegandBits(value: value, count: n)
    }
}
