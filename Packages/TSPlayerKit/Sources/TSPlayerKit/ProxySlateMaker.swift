public import HLSAdFilter

/// The default slate source.
public struct ProxySlateMaker: ProxySlateSource {
    public init() {}

    public func slate(for slot: SlateSlot, anchor: [UInt8]?) async -> [UInt8]? {
        nil
    }
}
