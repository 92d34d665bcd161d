# `cmake --install` lays mhaviz out as a desktop app in the standard places (FHS and the
# freedesktop specifications), and CPack makes the .deb of it (`scripts/dev.sh package`):
#
#   bin/mhaviz
#   share/applications/APP_ID.desktop                    menu entry (desktop-file-validate)
#   share/metainfo/APP_ID.metainfo.xml                   AppStream (appstreamcli validate)
#   share/icons/hicolor/scalable/apps/APP_ID.svg         icon, and PNGs at NxN/apps/APP_ID.png
#   share/man/man1/mhaviz.1.gz                           man page
#   share/doc/mhaviz/copyright, changelog.gz             what Debian asks of every package
include(GNUInstallDirs)

# The reverse-DNS id names the desktop entry, the icon and the AppStream component alike;
# the homepage is where the AppStream screenshot is published. Set both for a release.
set(MHAVIZ_APP_ID "org.mhaviz.mhaviz" CACHE STRING "AppStream / desktop-entry id")
set(MHAVIZ_HOMEPAGE "https://mhaviz.org" CACHE STRING "Project homepage (AppStream url, .deb Homepage)")
set(MHAVIZ_MAINTAINER "mhaviz maintainers <maintainers@users.noreply.a-seed-889e0eb2.example>"
    CACHE STRING "Maintainer of the .deb")
set(MHAVIZ_ICON_SIZES 16 24 32 48 64 128 256 512)

set(_gen ${PROJECT_BINARY_DIR}/share)
configure_file(${PROJECT_SOURCE_DIR}/assets/desktop/mhaviz.desktop.in ${_gen}/${MHAVIZ_APP_ID}.desktop @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/assets/desktop/mhaviz.metainfo.xml.in ${_gen}/${MHAVIZ_APP_ID}.metainfo.xml @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/doc/mhaviz.1 ${_gen}/mhaviz.1 @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/packaging/changelog ${_gen}/changelog @ONLY)
# Debian wants man pages and changelogs compressed, without a timestamp (-n) so that
# the package is reproducible.
find_program(MHAVIZ_GZIP gzip REQUIRED)
foreach(f mhaviz.1 changelog)
  add_custom_command(OUTPUT ${_gen}/${f}.gz
    COMMAND ${MHAVIZ_GZIP} -9nc ${_gen}/${f} > ${_gen}/${f}.gz
    DEPENDS ${_gen}/${f} VERBATIM)
endforeach()
add_custom_target(mhaviz_share ALL DEPENDS ${_gen}/mhaviz.1.gz ${_gen}/changelog.gz)

install(TARGETS mhaviz RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${_gen}/${MHAVIZ_APP_ID}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${_gen}/${MHAVIZ_APP_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
install(FILES ${PROJECT_SOURCE_DIR}/assets/icons/mhaviz.svg
        DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps RENAME ${MHAVIZ_APP_ID}.svg)
foreach(s ${MHAVIZ_ICON_SIZES})
  install(FILES ${PROJECT_SOURCE_DIR}/assets/icons/mhaviz-${s}.png
          DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/${s}x${s}/apps RENAME ${MHAVIZ_APP_ID}.png)
endforeach()
install(FILES ${_gen}/mhaviz.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/copyright ${_gen}/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# [SECTION] The .deb
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mhaviz)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${MHAVIZ_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "see multi-head attention compute, head by head")
# The extended description (CPack puts the summary above it and indents each line; no
# double quotes: CPack writes this into CPackConfig.cmake unescaped).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "A desktop app that teaches the multi-head attention of chapter 3 of
Build a Large Language Model (From Scratch): every head's masked
attention matrix computed live as tokens, d_out, the number of heads and
dropout change, with the very numbers PyTorch prints for the same seed; a
step-by-step walkthrough of the view, transpose and merge of the tensors;
the wrapper of single-head modules beside the weight-split module; every
layer and head of a trained GPT-2. Command-line subcommands write the
tensors (JSON, LaTeX, CSV, NumPy) and the figures (PNG, SVG) for slides.")
set(CPACK_DEBIAN_PACKAGE_SECTION education)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${MHAVIZ_HOMEPAGE}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # mhaviz_VERSION_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)   # Depends: from dpkg-shlibdeps on the binary
# The window needs an OpenGL 3.3 driver, which no library links: Mesa's (llvmpipe at least).
# A font with Chinese, Japanese and Korean characters, which DejaVu has not (tokens of Qwen's
# vocabulary, a text typed in those scripts); any installed font fontconfig offers serves.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libgl1-mesa-dri, fonts-noto-cjk | fonts-droid-fallback")
set(CPACK_STRIP_FILES ON)
# Files root-owned and world-readable whatever the builder's umask.
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
