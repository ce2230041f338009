import Foundation
public import FragmentedMP4

/// fMP4 slates are FragmentedMP4's; TSPlayerKit keeps the name for its users and its proxy.
public typealias FragmentedSlateTemplate = FragmentedMP4.FragmentedSlateTemplate

extension FragmentedMP4.FragmentedSlateTemplate {
    /// The template TSPlayerKit ships (``ProxySlateTemplate``: one black 320x240 H.264 IDR frame at 25 fps,
    /// timescale 90000): the proxy's fMP4 slates are made from it.
    public static let shipped: FragmentedMP4.FragmentedSlateTemplate? = {
        guard let data = Data(base64Encoded: ProxySlateTemplate.base64) else { return nil }
        return FragmentedMP4.FragmentedSlateTemplate([UInt8](data))
    }()
}
