public import HLSPlaylist

/// Choosing the variant and renditions of a multivariant playlist.
public enum Selection {
    /// The index in `variants` chosen by `policy`, or nil when none fits (no variants, or no codec match).
    public static func variantIndex(_ variants: [VariantStream], policy: VariantPolicy) -> Int? {
        guard !variants.isEmpty else { return nil }
        func bandwidth(_ v: VariantStream) -> UInt64 { v.bandwidth ?? v.averageBandwidth ?? 0 }
        func pixels(_ v: VariantStream) -> UInt64 {
            guard let r = v.resolution else { return 0 }
            return r.width.multipliedReportingOverflow(by: r.height).partialValue
        }
        let indices = Array(variants.indices)
        func better(_ a: Int, _ b: Int) -> Bool {
            let (x, y) = (variants[a], variants[b])
            if bandwidth(x) != bandwidth(y) { return bandwidth(x) > bandwidth(y) }
            return pixels(x) > pixels(y)
        }
        switch policy {
        case .best:
            return indices.min { better($0, $1) }
        case .worst:
            return indices.min { better($1, $0) }
        case .bandwidth(let target):
            return indices.min { a, b in
                let da = distance(bandwidth(variants[a]), target)
                let db = distance(bandwidth(variants[b]), target)
                return da != db ? da < db : better(a, b)
            }
        case .resolution(let width, let height):
            let target = width.multipliedReportingOverflow(by: height).partialValue
            return indices.min { a, b in
                let da = distance(pixels(variants[a]), target)
                let db = distance(pixels(variants[b]), target)
                return da != db ? da < db : better(a, b)
            }
        case .codec(let family):
            let wanted = family.lowercased()
            let matching = indices.filter { index in
                let codecs = (variants[index].codecs ?? "").lowercased().split(separator: ",")
                return codecs.contains { $0.trimmingCharacters(in: " ").hasPrefix(wanted) }
            }
            return matching.min { better($0, $1) }
        }
    }

    private static func distance(_ a: UInt64, _ b: UInt64) -> UInt64 { a > b ? a - b : b - a }

    /// The renditions (indices into `renditions`) of `type` in `groupID` that have a URI and fit `policy`.
    public static func renditionIndices(
        _ renditions: [Rendition], type: String, groupID: String?, policy: RenditionPolicy
    ) -> [Int] {
        guard let groupID else { return [] }
        let group = renditions.indices.filter {
            renditions[$0].type == type && renditions[$0].groupID == groupID && renditions[$0].uri != nil
        }
        switch policy {
        case .none:
            return []
        case .all:
            return group
        case .automatic:
            if let chosen = group.first(where: { renditions[$0].isDefault }) ?? group.first { return [chosen] }
            return []
        case .language(let language):
            let wanted = language.lowercased()
            let matching = group.filter { index in
                guard let tag = renditions[index].language?.lowercased() else { return false }
                return tag == wanted || tag.hasPrefix(wanted + "-")
            }
            if !matching.isEmpty { return matching }
            return renditionIndices(renditions, type: type, groupID: groupID, policy: .automatic)
        }
    }
}

extension Substring {
    func trimmingCharacters(in set: Character) -> Substring {
        var s = self
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return s
    }
}
