// The OpenSSL 3 functions Weft's TLS calls, as one list: tls_library.cc resolves each by name and
// TlsLibrary holds a pointer of its exact type. Included only where the build has OpenSSL's headers.
#pragma once
#include "weft/build_config.h"

#if WEFT_HAVE_OPENSSL
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

// X(return type, name, (parameter types))
#define WEFT_TLS_FUNCTIONS(X)                                                                      \
  X(int, OPENSSL_init_ssl, (uint64_t, const OPENSSL_INIT_SETTINGS*))                               \
  X(const SSL_METHOD*, TLS_method, (void))                                                         \
  X(SSL_CTX*, SSL_CTX_new, (const SSL_METHOD*))                                                    \
  X(void, SSL_CTX_free, (SSL_CTX*))                                                                \
  X(long, SSL_CTX_ctrl, (SSL_CTX*, int, long, void*))                                              \
  X(int, SSL_CTX_set_ciphersuites, (SSL_CTX*, const char*))                                        \
  X(int, SSL_CTX_set_num_tickets, (SSL_CTX*, size_t))                                              \
  X(void, SSL_CTX_set_verify, (SSL_CTX*, int, SSL_verify_cb))                                      \
  X(void, SSL_CTX_set_psk_use_session_callback, (SSL_CTX*, SSL_psk_use_session_cb_func))           \
  X(void, SSL_CTX_set_psk_find_session_callback, (SSL_CTX*, SSL_psk_find_session_cb_func))         \
  X(int, SSL_CTX_set_ex_data, (SSL_CTX*, int, void*))                                              \
  X(void*, SSL_CTX_get_ex_data, (const SSL_CTX*, int))                                             \
  X(SSL_CTX*, SSL_get_SSL_CTX, (const SSL*))                                                       \
  X(SSL*, SSL_new, (SSL_CTX*))                                                                     \
  X(void, SSL_free, (SSL*))                                                                        \
  X(void, SSL_set_bio, (SSL*, BIO*, BIO*))                                                         \
  X(void, SSL_set_connect_state, (SSL*))                                                           \
  X(void, SSL_set_accept_state, (SSL*))                                                            \
  X(int, SSL_do_handshake, (SSL*))                                                                 \
  X(int, SSL_read_ex, (SSL*, void*, size_t, size_t*))                                              \
  X(int, SSL_write_ex, (SSL*, const void*, size_t, size_t*))                                       \
  X(int, SSL_get_error, (const SSL*, int))                                                         \
  X(int, SSL_session_reused, (const SSL*))                                                         \
  X(const SSL_CIPHER*, SSL_CIPHER_find, (SSL*, const unsigned char*))                              \
  X(SSL_SESSION*, SSL_SESSION_new, (void))                                                         \
  X(void, SSL_SESSION_free, (SSL_SESSION*))                                                        \
  X(int, SSL_SESSION_set1_master_key, (SSL_SESSION*, const unsigned char*, size_t))                \
  X(int, SSL_SESSION_set_cipher, (SSL_SESSION*, const SSL_CIPHER*))                                \
  X(int, SSL_SESSION_set_protocol_version, (SSL_SESSION*, int))                                    \
  X(int, BIO_get_new_index, (void))                                                                \
  X(BIO_METHOD*, BIO_meth_new, (int, const char*))                                                 \
  X(int, BIO_meth_set_write, (BIO_METHOD*, int (*)(BIO*, const char*, int)))                       \
  X(int, BIO_meth_set_read, (BIO_METHOD*, int (*)(BIO*, char*, int)))                              \
  X(int, BIO_meth_set_ctrl, (BIO_METHOD*, long (*)(BIO*, int, long, void*)))                       \
  X(BIO*, BIO_new, (const BIO_METHOD*))                                                            \
  X(void, BIO_set_data, (BIO*, void*))                                                             \
  X(void*, BIO_get_data, (BIO*))                                                                   \
  X(void, BIO_set_init, (BIO*, int))                                                               \
  X(void, BIO_set_flags, (BIO*, int))                                                              \
  X(void, BIO_clear_flags, (BIO*, int))                                                            \
  X(int, EVP_Digest, (const void*, size_t, unsigned char*, unsigned int*, const EVP_MD*, ENGINE*)) \
  X(const EVP_MD*, EVP_sha256, (void))                                                             \
  X(unsigned long, ERR_get_error, (void))                                                          \
  X(void, ERR_error_string_n, (unsigned long, char*, size_t))                                      \
  X(void, ERR_clear_error, (void))
#else
#define WEFT_TLS_FUNCTIONS(X)
#endif
