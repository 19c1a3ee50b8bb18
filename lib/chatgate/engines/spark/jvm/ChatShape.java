package chatgate.jvm;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.api.java.UDF3;

/**
 * The roles of a JSON conversation in the one shape whose verdict its roles alone decide, read
 * on the JVM so that the Spark engine need not hand the text to Python.
 *
 * <p>It returns the roles joined by commas when the UTF-8 text is, exactly: a JSON array (JSON
 * whitespace around its tokens) of one or more objects, each with the role key and the content
 * key once and no other key; each role a non-empty string of ASCII letters, digits, '_' or '-';
 * each content a JSON string of valid UTF-8 holding a printable ASCII character other than a
 * backslash (so no rule finds it blank). For anything else it returns null, and Python judges
 * the text: bad UTF-8 anywhere, raw control characters, escaped surrogates, numbers, nesting,
 * other or repeated keys. It decides no rule: Python judges each sequence of roles.
 */
public final class ChatShape implements UDF3<byte[], String, String, String> {
    private static final long serialVersionUID = 1L;
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGH = 0x8080808080808080L;
    private static final long QUOTES = 0x22 * ONES;
    private static final long BACKSLASHES = 0x5c * ONES;
    private static final long CONTROLS = 0x20 * ONES;
    private static final long SPACES = 0x20 * ONES;

    @Override
    public String call(byte[] text, String roleKey, String contentKey) {
        if (text == null || roleKey == null || contentKey == null || roleKey.equals(contentKey)) {
            return null;
        }
        return new Reader(text, bytes(roleKey), bytes(contentKey)).conversation();
    }

    private static byte[] bytes(String key) {
        return key.getBytes(StandardCharsets.UTF_8);
    }

    /** One text, read once from its first byte. */
    private static final class Reader {
        private final byte[] text;
        private final byte[] roleKey;
        private final byte[] contentKey;
        private int at;

        Reader(byte[] text, byte[] roleKey, byte[] contentKey) {
            this.text = text;
            this.roleKey = roleKey;
            this.contentKey = contentKey;
        }

        String conversation() {
            StringBuilder roles = new StringBuilder();
            space();
            if (!take('[')) {
                return null;
            }
            do {
                space();
                int role = message();
                if (role < 0) {
                    return null;
                }
                if (roles.length() > 0) {
                    roles.append(',');
                }
                for (int i = role; text[i] != '"'; i++) {
                    roles.append((char) text[i]);
                }
                space();
            } while (take(','));
            if (!take(']')) {
                return null;
            }
            space();
            return at == text.length ? roles.toString() : null;
        }

        /** Where the role of the message object at `at` starts, or -1. */
        private int message() {
            if (!take('{')) {
                return -1;
            }
            int role = -1;
            boolean content = false;
            do {
                space();
                int key = name(false);
                int keyEnd = at - 1;
                space();
                if (key < 0 || !take(':')) {
                    return -1;
                }
                space();
                if (role < 0 && same(key, keyEnd, roleKey)) {
                    role = name(true);
                    if (role < 0) {
                        return -1;
                    }
                } else if (!content && same(key, keyEnd, contentKey)) {
                    if (!filledString()) {
                        return -1;
                    }
                    content = true;
                } else {
                    return -1;
                }
                space();
            } while (take(','));
            return take('}') && content ? role : -1;
        }

        private boolean same(int start, int end, byte[] key) {
            if (end - start != key.length) {
                return false;
            }
            for (int i = 0; i < key.length; i++) {
                if (text[start + i] != key[i]) {
                    return false;
                }
            }
            return true;
        }

        /** Where a non-empty string without escapes starts, or -1: of name characters only
         * (`role`), else of printable ASCII. */
        private int name(boolean role) {
            if (!take('"')) {
                return -1;
            }
            int start = at;
            while (at < text.length) {
                byte c = text[at++];
                if (c == '"') {
                    return at - 1 > start ? start : -1;
                }
                if (role ? !isNameByte(c) : c < 0x20 || c == '\\' || c == 0x7f) {
                    return -1;
                }
            }
            return -1;
        }

        /** A valid JSON string of valid UTF-8 holding a printable ASCII character other than a
         * backslash. */
        private boolean filledString() {
            if (!take('"')) {
                return false;
            }
            boolean filled = false;
            while (true) {
                filled |= plainRun();
                if (at >= text.length) {
                    return false;
                }
                byte c = text[at++];
                if (c == '"') {
                    return filled;
                } else if (c == '\\') {
                    if (!escape()) {
                        return false;
                    }
                } else if (c < 0) {
                    if (!multiByte(c)) {
                        return false;
                    }
                } else if (c < 0x20) {
                    return false;
                } else if (c != ' ') {
                    filled = true;
                }
            }
        }

        /** Skips 8 bytes at a time while they are printable ASCII, none a quote or a backslash
         * (most of a content); true when a skipped byte isn't a space. */
        private boolean plainRun() {
            boolean filled = false;
            while (at + 8 <= text.length) {
                long x = (long) LONGS.get(text, at);
                long special = zero(x ^ QUOTES) | zero(x ^ BACKSLASHES) | ((x - CONTROLS) & ~x) | x;
                if ((special & HIGH) != 0) {
                    return filled;
                }
                filled |= x != SPACES;
                at += 8;
            }
            return filled;
        }

        /** High bit set in each byte of `x` that is zero (and maybe above one that is). */
        private static long zero(long x) {
            return (x - ONES) & ~x;
        }

        /** The rest of a UTF-8 sequence after its lead byte: no overlong form, no surrogate,
         * nothing past U+10FFFF (as Python's decoder). */
        private boolean multiByte(byte lead) {
            int b = lead & 0xff;
            int more;
            int low = 0x80;
            int high = 0xbf;
            if (b >= 0xc2 && b <= 0xdf) {
                more = 1;
            } else if (b >= 0xe0 && b <= 0xef) {
                more = 2;
                if (b == 0xe0) {
                    low = 0xa0;
                } else if (b == 0xed) {
                    high = 0x9f;
                }
            } else if (b >= 0xf0 && b <= 0xf4) {
                more = 3;
                if (b == 0xf0) {
                    low = 0x90;
                } else if (b == 0xf4) {
                    high = 0x8f;
                }
            } else {
                return false;
            }
            if (at + more > text.length) {
                return false;
            }
            for (int i = 0; i < more; i++) {
                int next = text[at++] & 0xff;
                if (next < low || next > high) {
                    return false;
                }
                low = 0x80;
                high = 0xbf;
            }
            return true;
        }

        /** The rest of an escape after its backslash; an escaped surrogate is refused. */
        private boolean escape() {
            if (at >= text.length) {
                return false;
            }
            byte c = text[at++];
            if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
                return true;
            }
            if (c != 'u' || at + 4 > text.length) {
                return false;
            }
            int code = 0;
            for (int i = 0; i < 4; i++) {
                int digit = Character.digit(text[at++], 16);
                if (digit < 0) {
                    return false;
                }
                code = code * 16 + digit;
            }
            return code < 0xD800 || code > 0xDFFF;
        }

        private static boolean isNameByte(byte c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        }

        private boolean take(char c) {
            if (at < text.length && text[at] == c) {
                at++;
                return true;
            }
            return false;
        }

        private void space() {
            while (at < text.length) {
                byte c = text[at];
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                at++;
            }
        }
    }
}
