package io.unboundedcloud.playpen.auth;

/** The Go-style name reader on raw bytes, for the property tests outside this package. */
public final class GoCertificateNamesAccess {
    private GoCertificateNamesAccess() {
    }

    /** The last CN of an RDNSequence's contents (the bytes inside the Name's SEQUENCE). */
    public static String commonNameOf(byte[] rdnSequenceContents) throws GoCertificateNames.Unreadable {
        return GoCertificateNames.commonNameOf(new GoCertificateNames.Der(rdnSequenceContents, 0, rdnSequenceContents.length));
    }
}
